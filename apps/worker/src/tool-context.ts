// The context a running tool gets: cancellation, progress relayed to the client, input requests (elicitation,
// sampling) that put the task in input_required until the client answers, and what the tool keeps durably
// (checkpoints, steps, child tasks: durable-run.ts and child-calls.ts, docs/durable-execution.md).
import type { Job } from 'bullmq';
import {
  type InputBroker,
  type SessionEvents,
  type SessionStore,
  type TaskStore,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { type Logger, type TraceContext } from '@mcp-tasks/runtime';
import {
  LocalError,
  LocalErrorCode,
  MODERN_PROTOCOL_VERSIONS,
  ModernErrorCode,
  ProtocolError,
  relatedTaskMeta,
  TaskKind,
  TaskStatus,
  type InputOptions,
  type TaskRecord,
  type ToolContext,
} from '@mcp-tasks/protocol';
import { inChildSpan } from './job-trace.ts';

const PROGRESS_MIN_INTERVAL_MS = 250;

export interface InputSettings {
  timeoutMs: number;
  recheckMs: number;
}

export interface ContextDeps {
  events: SessionEvents;
  inputs: InputBroker;
  sessions: SessionStore;
  store: TaskStore;
  input: InputSettings;
  /** Called around a wait for the client, so the worker can lend the slot to another job meanwhile. */
  waitBudget: { enter(): () => void };
  workerName: string;
}

/** What a tool keeps durably, as its attempt provides it (run-tool.ts), and its waits (durable-waits.ts). */
export type DurableParts = Pick<
  ToolContext,
  'checkpoint' | 'lastCheckpoint' | 'step' | 'callTool' | 'sleep' | 'sleepUntil' | 'waitForEvent' | 'signalTask'
> & {
  /** An input request the attempt parks on until the answer (`park: true`; docs/durable-execution.md). */
  askParked: (method: string, params: Record<string, unknown>, key?: string) => Promise<Record<string, unknown>>;
};

export function createToolContext(
  deps: ContextDeps,
  task: TaskRecord,
  job: Job<ToolJobData>,
  signal: AbortSignal,
  log: Logger,
  /** The attempt's trace context (tracing on): each wait for the client is a span of its own. */
  trace: TraceContext | undefined,
  durable: DurableParts,
): ToolContext {
  const ask = (method: string, capability: string, params: Record<string, unknown>, options?: InputOptions) =>
    inChildSpan(trace, `input wait ${method}`, { 'mcp.task.id': task.taskId, 'mcp.method.name': method }, () =>
      askClient(method, capability, params, options?.key, options?.park === true),
    );
  const askClient = async (
    method: string,
    capability: string,
    params: Record<string, unknown>,
    key?: string,
    park = false,
  ) => {
    const session = await deps.sessions.get(task.sessionId);
    if (!session) {
      throw new LocalError(LocalErrorCode.SessionEnded, `Cannot send ${method}: the client's session has ended`, {
        taskId: task.taskId,
      });
    }
    if (!(capability in session.clientCapabilities)) {
      // On the 2026-07-28 wire a missing capability is the request's error, with what it lacks (C26-META-4).
      if (MODERN_PROTOCOL_VERSIONS.includes(session.protocolVersion)) {
        throw new ProtocolError(
          ModernErrorCode.MissingRequiredClientCapability,
          `The request did not declare the '${capability}' capability, which ${method} needs`,
          { requiredCapabilities: { [capability]: {} } },
        );
      }
      throw new LocalError(
        LocalErrorCode.CapabilityMissing,
        `The client did not declare the '${capability}' capability, so ${method} cannot be sent`,
        {
          taskId: task.taskId,
        },
      );
    }
    // Parked, the attempt ends until the answer (durable-waits.ts); a client that runs such requests as tasks of its
    // own is asked as below instead: its answer comes from a second request (tasks/result) the worker waits on.
    if (park && !clientRunsAsTask(session.clientCapabilities, method)) return durable.askParked(method, params, key);
    const release = deps.waitBudget.enter();
    const options = {
      signal,
      timeoutMs: deps.input.timeoutMs,
      recheckMs: deps.input.recheckMs,
      resumeMessage: `Running on ${deps.workerName}.`,
      attempt: job.attemptsStarted,
      ...(key !== undefined ? { key } : {}),
    };
    try {
      // A client that runs such requests as tasks of its own (T-CAP-3) gets them task-augmented: it answers at once
      // with CreateTaskResult, and its tasks/result — blocking on the client until its task ends — gives the answer.
      if (!clientRunsAsTask(session.clientCapabilities, method))
        return await deps.inputs.ask(task, method, params, options);
      const ttl = Math.max(1000, Math.min(deps.input.timeoutMs, task.createdAt + task.ttl - Date.now()));
      const created = await deps.inputs.ask(task, method, { ...params, task: { ttl } }, options);
      const clientTaskId = (created['task'] as { taskId?: unknown } | undefined)?.taskId;
      if (typeof clientTaskId !== 'string') return created;
      try {
        return await deps.inputs.ask(
          task,
          'tasks/result',
          { taskId: clientTaskId },
          { ...options, relatedTask: false },
        );
      } catch (error) {
        // Our task ended or gave up waiting: the client's task (a prompt in front of a user, say) is not needed.
        if (clientCancelsTasks(session.clientCapabilities)) {
          await deps.inputs.tell(task, 'tasks/cancel', { taskId: clientTaskId }).catch(() => undefined);
        }
        throw error;
      }
    } finally {
      release();
    }
  };
  return {
    taskId: task.taskId,
    // Every earlier run counts: failed ones, crashes and lost locks (stalls), and hand-backs on shutdown (the record
    // counts those: BullMQ does not). A job held back by a per-requestor cap did not run.
    attempt: job.attemptsMade + job.stalledCounter + (task.handBacks ?? 0) + 1,
    signal,
    log,
    progress: relayProgress(deps, task, job),
    elicit: (params, options) => {
      // Form mode only: URL mode needs an elicitationId and notifications/elicitation/complete, which 2026-07-28
      // removed (C26-MRTR-8) and which we do not relay on 2025-11-25 either.
      if ((params.mode !== undefined && params.mode !== 'form') || 'elicitationId' in params) {
        return Promise.reject(
          new LocalError(
            LocalErrorCode.InputError,
            "elicit() sends form-mode requests only: URL mode ('mode' other than 'form', 'elicitationId') is not supported",
            { taskId: task.taskId },
          ),
        );
      }
      return ask('elicitation/create', 'elicitation', { mode: 'form', ...params }, options);
    },
    sample: (params, options) => ask('sampling/createMessage', 'sampling', params, options),
    listRoots: (options) => ask('roots/list', 'roots', {}, options),
    checkpoint: durable.checkpoint,
    lastCheckpoint: durable.lastCheckpoint,
    step: durable.step,
    callTool: durable.callTool,
    sleep: durable.sleep,
    sleepUntil: durable.sleepUntil,
    waitForEvent: durable.waitForEvent,
    signalTask: durable.signalTask,
  };
}

/**
 * Progress goes to the client as notifications/progress with the original progressToken (T-PROG-1), at most every
 * 250 ms (the last step always), and onto the BullMQ job for operators.
 */
function relayProgress(
  deps: Pick<ContextDeps, 'events' | 'sessions' | 'store'>,
  task: TaskRecord,
  job: Job<ToolJobData>,
): ToolContext['progress'] {
  const { events } = deps;
  // A task of a 2026-07-28 request has no progress notifications (X-NTF-3): its progress is its statusMessage.
  let modernTask: Promise<boolean> | undefined;
  let last = 0;
  return async (progress, total, message) => {
    const now = Date.now();
    if (now - last < PROGRESS_MIN_INTERVAL_MS && (total === undefined || progress < total)) return;
    last = now;
    const detail = { progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) };
    const writes: Promise<unknown>[] = [job.updateProgress(detail)];
    modernTask ??=
      task.kind === TaskKind.Task
        ? deps.sessions
            .get(task.sessionId)
            .then((session) => MODERN_PROTOCOL_VERSIONS.includes(session?.protocolVersion ?? ''))
        : Promise.resolve(false);
    if (await modernTask.catch(() => false)) {
      const statusMessage = message ?? `Progress ${progress}${total !== undefined ? ` of ${total}` : ''}.`;
      writes.push(
        deps.store.transition(task, TaskStatus.Working, {
          statusMessage,
          from: [TaskStatus.Working],
          attempt: job.attemptsStarted,
        }),
      );
    }
    if (task.progressToken !== undefined) {
      writes.push(
        events.append(task.sessionId, task.taskId, {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: {
            progressToken: task.progressToken,
            ...detail,
            ...(task.kind === TaskKind.Task ? { _meta: relatedTaskMeta(task.taskId) } : {}),
          },
        }),
      );
    }
    // Progress is advisory: a failed write must not fail the tool.
    await Promise.all(writes).catch(() => undefined);
  };
}

/** Whether the client declared `tasks.cancel`: it accepts tasks/cancel for the tasks it runs for us. */
function clientCancelsTasks(capabilities: Record<string, unknown>): boolean {
  const tasks = capabilities['tasks'] as { cancel?: unknown } | undefined;
  return tasks?.cancel !== undefined;
}

/** Whether the client declared `tasks.requests.<category>.<action>` for this method (T-CAP-2: the list is exhaustive). */
function clientRunsAsTask(capabilities: Record<string, unknown>, method: string): boolean {
  if (method === 'roots/list') return false; // not task-augmentable in 2025-11-25
  const [category, action] =
    method === 'elicitation/create' ? ['elicitation', 'create'] : ['sampling', 'createMessage'];
  const tasks = capabilities['tasks'] as { requests?: Record<string, Record<string, unknown> | undefined> } | undefined;
  return tasks?.requests?.[category]?.[action] !== undefined;
}
