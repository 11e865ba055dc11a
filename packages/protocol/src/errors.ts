// The runner's typed errors: what went wrong, in our words and with its context, never a JSON-RPC code. The engine
// and the api's use cases throw them; each wire turns them into its codes and messages in one place
// (apps/api/src/wires/errors.ts, with each wire's own table), so that a condition reads the same whichever revision
// the client speaks.

/**
 * The codes of failures inside our processes. A tool may catch a LocalError from its context (`elicit`, `sample`)
 * and branch on its code; the values are stable strings, so they can be logged and matched across versions.
 */
export const LocalErrorCode = {
  /** The owner already has MAX_TASKS_PER_OWNER unfinished tasks. */
  OwnerTaskLimit: 'owner-task-limit',
  /** The task ended (cancelled, settled, expired) while its tool waited for the client. */
  TaskEnded: 'task-ended',
  /** The client's session ended before an input request could be sent. */
  SessionEnded: 'session-ended',
  /** The client did not declare the capability an input request needs. */
  CapabilityMissing: 'capability-missing',
  /** The client did not answer an input request within INPUT_REQUEST_TIMEOUT_MS. */
  InputTimeout: 'input-timeout',
  /** The client answered an input request with a JSON-RPC error. */
  InputError: 'input-error',
  /** A later attempt of the task's job started: this one may no longer move the task. */
  AttemptSuperseded: 'attempt-superseded',
  /** An attempt tried to move its task before it was started through the fence. */
  AttemptNotStarted: 'attempt-not-started',
  /** A task id names no task of the caller (or an operator named one that does not exist). */
  TaskNotFound: 'task-not-found',
  /** An operator asked for something the task's state does not allow (retry of a live task, say). */
  NotAllowed: 'not-allowed',
  /** A request was refused as a method's script opened it: its session is gone, or a rate limit refused it. */
  RequestRefused: 'request-refused',
  /** A configured bound was reached (tasks per owner, argument size, rate, streams ...). */
  LimitExceeded: 'limit-exceeded',
  /** What the caller sent cannot be used: an unknown tool, invalid arguments, a cursor we did not issue. */
  InvalidInput: 'invalid-input',
  /** The task's state does not allow what was asked (cancelling a finished task). */
  InvalidState: 'invalid-state',
  /** A tool was asked for a way of running it does not offer (as a task, or not as one). */
  TaskSupport: 'task-support',
  /** The caller gave up on the request (closed it) before its answer. */
  RequestCancelled: 'request-cancelled',
  /** A plain call's record is gone: answered elsewhere, or expired before it finished. */
  CallGone: 'call-gone',
  /** The runner could not do its part (a queue, a tool's unusable schema): not the caller's fault. */
  Unavailable: 'unavailable',
  /** A checkpoint or step result is larger than DURABLE_MAX_BYTES (docs/durable-execution.md). */
  DurableTooLarge: 'durable-too-large',
  /** A task already keeps DURABLE_MAX_STEPS step results and child tasks (docs/durable-execution.md). */
  DurableFull: 'durable-full',
  /** A step name (or a child call's key) was used twice in one attempt (docs/durable-execution.md). */
  StepNameReused: 'step-name-reused',
  /** A replayed child call differs from the call filed under its key (docs/durable-execution.md, "Replay"). */
  NonDeterministicCall: 'non-deterministic-call',
  /** A sleep or a wait would end after its task expires (docs/durable-execution.md, "Waits"). */
  WaitTooLong: 'wait-too-long',
} as const;
export type LocalErrorCode = (typeof LocalErrorCode)[keyof typeof LocalErrorCode];

/** A failure inside our processes, identified by a {@link LocalErrorCode} and carrying its context. */
export class LocalError extends Error {
  override readonly name: string = 'LocalError';
  constructor(
    readonly code: LocalErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const TASK_NOT_FOUND = 'Failed to retrieve task: Task not found';

/**
 * A task id that names no task of the caller: unknown, expired, or someone else's, which must not be told apart
 * (T-ERR-1, T-SEC-1). It counts against the caller's failed-lookup budget by its type.
 */
export class TaskNotFoundError extends LocalError {
  override readonly name = 'TaskNotFoundError';
  constructor(message: string = TASK_NOT_FOUND, context: Record<string, unknown> = {}) {
    super(LocalErrorCode.TaskNotFound, message, context);
  }
}

/** A bound with a documented default was reached; `limit` names it, `max` is its value (both go to the client). */
export class LimitExceededError extends LocalError {
  override readonly name = 'LimitExceededError';
  constructor(
    readonly limit: string,
    readonly max: number,
    message: string,
    /** More that the client may act on (retryAfterMs, the size it sent ...). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(LocalErrorCode.LimitExceeded, message, { limit, max, ...details });
  }
}

/** What the caller sent cannot be used; the message says what and how to fix it. */
export class InvalidInputError extends LocalError {
  override readonly name = 'InvalidInputError';
  constructor(message: string, context: Record<string, unknown> = {}) {
    super(LocalErrorCode.InvalidInput, message, context);
  }
}

/** The task is not in a state that allows the request. */
export class InvalidStateError extends LocalError {
  override readonly name = 'InvalidStateError';
  constructor(
    message: string,
    readonly current: string,
  ) {
    super(LocalErrorCode.InvalidState, message, { current });
  }
}

/**
 * A tool called in a way its taskSupport does not allow: `required` (it runs only as a task, and the request did
 * not ask for one) or `forbidden` (it never runs as a task, and the request asked for one). Each wire words the
 * remedy its own way (params.task, or the tasks extension).
 */
export class TaskSupportError extends LocalError {
  override readonly name = 'TaskSupportError';
  constructor(
    readonly tool: string,
    readonly support: 'required' | 'forbidden',
  ) {
    super(
      LocalErrorCode.TaskSupport,
      support === 'required'
        ? `Tool '${tool}' must be called as a task (execution.taskSupport is 'required')`
        : `Tool '${tool}' cannot be called as a task (execution.taskSupport is 'forbidden')`,
      { tool, support },
    );
  }
}

/** The request was cancelled by its caller (it closed the request) before its answer. */
export class RequestCancelledError extends LocalError {
  override readonly name = 'RequestCancelledError';
  constructor(message = 'The request was cancelled') {
    super(LocalErrorCode.RequestCancelled, message);
  }
}

/**
 * A plain call is gone: answered through another stream, or expired before it finished. A plain call has no task
 * to be "not found", but a resumed stream that names one counts as a failed lookup all the same.
 */
export class CallGoneError extends LocalError {
  override readonly name = 'CallGoneError';
  constructor(message = 'The call is gone: it finished and was answered, or expired') {
    super(LocalErrorCode.CallGone, message);
  }
}

/** The runner could not do its part; the message says what failed, in our words. */
export class UnavailableError extends LocalError {
  override readonly name = 'UnavailableError';
  constructor(message: string, context: Record<string, unknown> = {}) {
    super(LocalErrorCode.Unavailable, message, context);
  }
}

/** A call as a NonDeterministicCallError names it: its tool and arguments (those of the call filed, when still kept). */
export interface NamedCall {
  tool: string;
  arguments?: unknown;
  /** The child task filed under the key (the recorded call's). */
  taskId?: string;
}

/**
 * A child call (ctx.callTool) of a later attempt that finds another call filed under its key: another tool or other
 * arguments. A replay never hands a call another call's result (docs/durable-execution.md, "Replay refuses to
 * guess"): the call fails instead, and the task with it unless the tool catches it (no retry: the next attempt would
 * make the same calls). `key` is the call's key, `recorded` the call an earlier attempt filed, `call` this one.
 */
export class NonDeterministicCallError extends LocalError {
  override readonly name = 'NonDeterministicCallError';
  constructor(
    readonly taskId: string,
    readonly key: string,
    readonly recorded: NamedCall,
    readonly call: NamedCall,
    /** Whether the tool named the key (`options.key`) rather than letting the call's tool and count name it. */
    keyed = false,
  ) {
    super(
      LocalErrorCode.NonDeterministicCall,
      `Child call '${key}' of task ${taskId} is not the call an earlier attempt made under that key: it was ` +
        `${describeCall(recorded)}, it is now ${describeCall(call)}. A replay does not hand a call another call's ` +
        'result. ' +
        (keyed
          ? 'A key names one call: give each different call a key of its own.'
          : `Calls without a key are named by their tool and count in the attempt ('${key}'): make them in the same ` +
            'order in every attempt, or pass a key naming each one: callTool(name, args, { key }).'),
      { taskId, key, recorded, call },
    );
  }
}

/** At most this much of a call's arguments goes into a message. */
const ARGUMENTS_SHOWN = 200;

function describeCall(call: NamedCall): string {
  let args = call.arguments === undefined ? '' : ` ${JSON.stringify(call.arguments) ?? ''}`;
  if (args.length > ARGUMENTS_SHOWN) args = `${args.slice(0, ARGUMENTS_SHOWN)}…`;
  return `'${call.tool}'${args}${call.taskId !== undefined ? ` (task ${call.taskId})` : ''}`;
}
