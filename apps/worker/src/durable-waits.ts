// The waits of one attempt of a tool (docs/durable-execution.md, "Waits"): sleeps, waits for an event, input requests
// parked until the client answers, events sent to other tasks, and steps retried with a policy of their own. A wait
// that must last parks the attempt: it is stored in the task's durable hash (WaitStore.park), `parked` resolves with
// what concludeRun needs to move the job to BullMQ's delayed set, and the tool's promise never settles (its code after
// the wait runs in the attempt that runs after the wake, which replays what was stored and finds the wait over).
import type { InputBroker, TaskSignals, TaskStore, WaitOutcome } from '@mcp-tasks/engine';
import { EVENT_NAME, readStoredWait, stepTriesKey } from '@mcp-tasks/engine';
import {
  InvalidInputError,
  isFinalError,
  LocalError,
  LocalErrorCode,
  retryDelayMs,
  RetryPolicySchema,
  toolQueueName,
  WaitKind,
  describeIssues,
  type EventOutcome,
  type RetryPolicy,
  type SchedulingInput,
  type SignalOutcome,
  type TaskRecord,
  type TaskWait,
} from '@mcp-tasks/protocol';
import { setTimeout as delay } from 'node:timers/promises';
import type { DurableRun } from './durable-run.ts';

/** What the waits of an attempt need from the worker (JobDeps.waits). */
export interface WaitDeps {
  store: Pick<TaskStore, 'waits' | 'transition'>;
  signals: Pick<TaskSignals, 'send'>;
  inputs: Pick<InputBroker, 'park' | 'abandoned'>;
  /** The most waits one task may make in its life (DURABLE_MAX_WAITS). */
  maxWaits: number;
  /** How long a parked input request waits for its answer (INPUT_REQUEST_TIMEOUT_MS, bounded by the ttl). */
  inputTimeoutMs: number;
}

/** Why an attempt parked: what concludeRun needs to park its job, and what the task's status says meanwhile. */
export interface Parking {
  wait: TaskWait;
  statusMessage: string;
  /** The input request parked on (an input wait): its answer wakes the job. */
  requestId?: string;
}

/** A key names a wait among the task's, as a step's name does a step. */
const MAX_KEY_LENGTH = 256;

export class AttemptWaits {
  /** Resolves once the attempt parks; never otherwise. */
  readonly parked: Promise<Parking>;
  #park: (parking: Parking) => void = () => undefined;
  #parking: Parking | undefined;
  readonly #used = new Set<string>();
  readonly #counts = new Map<string, number>();

  constructor(
    private readonly deps: WaitDeps,
    private readonly run: DurableRun,
    private readonly task: TaskRecord,
    private readonly signal: AbortSignal,
  ) {
    this.parked = new Promise((resolve) => (this.#park = resolve));
  }

  sleep(ms: number, key?: string): Promise<void> {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new InvalidInputError(`sleep() takes a number of milliseconds >= 0, got ${String(ms)}`));
    }
    return this.sleepUntil(Date.now() + ms, key);
  }

  async sleepUntil(at: Date | number, givenKey?: string): Promise<void> {
    const until = at instanceof Date ? at.getTime() : at;
    if (typeof until !== 'number' || !Number.isFinite(until)) {
      throw new InvalidInputError(`sleepUntil() takes a Date or epoch milliseconds, got ${String(at)}`);
    }
    const key = this.#claim(WaitKind.Sleep, givenKey, 'sleep');
    if (this.#parking) return never();
    const stored = this.#stored(key);
    if (stored) {
      // Over already (the wake's attempt): the code after it runs. A stored sleep keeps its own end, whatever `at`
      // says now (a relative sleep's end moves with each attempt's clock).
      if ('outcome' in stored || stored.pending.until <= Date.now()) return;
    } else {
      if (until <= Date.now()) return;
      this.#withinTtl(until, 'A sleep');
    }
    const parked = await this.deps.store.waits.park(this.task, this.#parkCall(key, WaitKind.Sleep, until));
    if ('outcome' in parked) return;
    return this.#parkNow({ kind: WaitKind.Sleep, until: parked.parked, key }, `Sleeping until ${iso(parked.parked)}.`);
  }

  async waitForEvent(name: string, options: { timeoutMs?: number; key?: string } = {}): Promise<EventOutcome> {
    if (typeof name !== 'string' || !EVENT_NAME.test(name)) {
      throw new InvalidInputError(
        `waitForEvent() takes an event name of 1 to 128 letters, digits, '.', '_', ':' or '-'; got ${JSON.stringify(name)}`,
      );
    }
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0)) {
      throw new InvalidInputError(
        `waitForEvent()'s timeoutMs is a number of milliseconds >= 0, got ${String(timeoutMs)}`,
      );
    }
    const key = this.#claim(WaitKind.Event, options.key, `event:${name}`);
    if (this.#parking) return never();
    const stored = this.#stored(key);
    if (stored && 'outcome' in stored) return eventOutcome(stored.outcome);
    let until = stored?.pending.until ?? this.#expiresAt();
    if (!stored && timeoutMs !== undefined) {
      until = Date.now() + timeoutMs;
      this.#withinTtl(until, 'An event wait');
    }
    const parked = await this.deps.store.waits.park(this.task, { ...this.#parkCall(key, WaitKind.Event, until), name });
    if ('outcome' in parked) return eventOutcome(parked.outcome);
    return this.#parkNow(
      { kind: WaitKind.Event, until: parked.parked, key, name },
      `Waiting for event '${name}' until ${iso(parked.parked)}.`,
    );
  }

  /** ctx.signalTask: an event for a task of this task's principal. */
  async signalTask(taskId: string, name: string, data?: unknown): Promise<SignalOutcome> {
    let json: string | undefined;
    try {
      json = data === undefined ? undefined : JSON.stringify(data);
    } catch (error) {
      throw new InvalidInputError(`The event's data is not JSON: ${(error as Error).message}`);
    }
    const sent = await this.deps.signals.send({
      taskId: String(taskId),
      name: String(name),
      owner: this.task.owner,
      ...(json !== undefined ? { data: json } : {}),
    });
    return { delivered: sent.delivered };
  }

  /**
   * An input request the attempt parks on until the client answers (`ask(..., { park: true })`): sent once per task
   * (the wait keeps its id), answered from the record in every attempt after the answer came.
   */
  async askParked(
    method: string,
    params: Record<string, unknown>,
    givenKey: string | undefined,
  ): Promise<Record<string, unknown>> {
    const key = this.#claim(WaitKind.Input, givenKey, `input:${method}`);
    if (this.#parking) return never();
    const stored = this.#stored(key);
    if (stored && 'outcome' in stored) return answerOf(stored.outcome, method, this.task.taskId);
    let request: { requestId: string; until: number };
    if (stored?.pending.requestId !== undefined) {
      request = { requestId: stored.pending.requestId, until: stored.pending.until };
      const taken = await this.deps.store.waits.takeInput(this.task, { attempt: this.run.fence, key, ...request });
      if (taken !== 'pending') {
        if (taken.withdrawn) await this.deps.inputs.abandoned(this.task, request.requestId).catch(() => undefined);
        return answerOf(taken.outcome, method, this.task.taskId);
      }
    } else {
      request = await this.deps.inputs.park(this.task, method, params, {
        timeoutMs: this.deps.inputTimeoutMs,
        attempt: this.run.fence,
        queue: toolQueueName(this.task.tool),
        ...(givenKey !== undefined ? { key: givenKey } : {}),
      });
    }
    const parked = await this.deps.store.waits.park(this.task, {
      ...this.#parkCall(key, WaitKind.Input, request.until),
      name: method,
      requestId: request.requestId,
    });
    if ('outcome' in parked) return answerOf(parked.outcome, method, this.task.taskId);
    return this.#parkNow(
      { kind: WaitKind.Input, until: parked.parked, key, name: method },
      `Waiting for the client to answer ${method}.`,
      request.requestId,
    );
  }

  /**
   * `fn` tried up to the policy's attempts, waiting its backoff between two tries (the slot held: a backoff is short,
   * at most maxDelayMs). Each failed try is counted for the task, so that an attempt cut off between two tries is
   * followed by one that goes on counting; when the step gives up, the count is forgotten (a later run of the tool,
   * its own retry, starts a new round) and the last error goes to the tool.
   */
  async retried<T>(step: string, fn: () => T | Promise<T>, given: SchedulingInput['retry']): Promise<T> {
    const policy = retryPolicy(given, step);
    const triesKey = stepTriesKey(step);
    const stored = this.run.waitOf(triesKey);
    let tries = stored === undefined ? 0 : Number(stored);
    const note = (count: number) =>
      this.deps.store.waits.noteTries(this.task, {
        attempt: this.run.fence,
        step,
        tries: count,
        maxEntries: this.run.limits.maxEntries,
      });
    for (;;) {
      try {
        return await fn();
      } catch (error) {
        tries++;
        if (isFinalError(error) || tries >= policy.attempts || this.signal.aborted) {
          if (tries > 1 || stored !== undefined) await note(0).catch(() => undefined);
          throw error;
        }
        await note(tries);
        await delay(retryDelayMs(policy, tries), undefined, { signal: this.signal });
      }
    }
  }

  /** Uses a wait's key once per attempt: its kind and the given key, or its kind's count in the attempt. */
  #claim(kind: WaitKind, given: string | undefined, counted: string): string {
    if (given !== undefined && (typeof given !== 'string' || given.length === 0 || given.length > MAX_KEY_LENGTH)) {
      throw new InvalidInputError(`A wait's key is 1 to ${MAX_KEY_LENGTH} characters, got ${JSON.stringify(given)}`);
    }
    let key: string;
    if (given !== undefined) key = `${kind}:${given}`;
    else {
      const count = (this.#counts.get(counted) ?? 0) + 1;
      this.#counts.set(counted, count);
      key = `${counted}#${count}`;
    }
    if (this.#used.has(key)) {
      throw new LocalError(
        LocalErrorCode.StepNameReused,
        `The wait key '${key}' is used twice in one attempt of task ${this.task.taskId}: give each wait a key of its own`,
        { taskId: this.task.taskId, key },
      );
    }
    this.#used.add(key);
    return key;
  }

  #stored(key: string) {
    const json = this.run.waitOf(key);
    return json === undefined ? undefined : readStoredWait(json);
  }

  #parkCall(key: string, kind: WaitKind, until: number) {
    return {
      attempt: this.run.fence,
      key,
      kind,
      until,
      maxEntries: this.run.limits.maxEntries,
      maxWaits: this.deps.maxWaits,
    };
  }

  #expiresAt(): number {
    return this.task.createdAt + this.task.ttl;
  }

  #withinTtl(until: number, what: string): void {
    const expiresAt = this.#expiresAt();
    if (until <= expiresAt) return;
    throw new LocalError(
      LocalErrorCode.WaitTooLong,
      `${what} until ${iso(until)} would end after task ${this.task.taskId} expires at ${iso(expiresAt)} (its ttl, ` +
        `${this.task.ttl} ms, counts from its creation): wait less, or create the task with a longer ttl`,
      { taskId: this.task.taskId, until, expiresAt },
    );
  }

  /** Parks the attempt: the wait's promise never settles, and `parked` tells run-tool.ts to end the attempt. */
  #parkNow(wait: TaskWait, statusMessage: string, requestId?: string): Promise<never> {
    this.#parking = { wait, statusMessage, ...(requestId !== undefined ? { requestId } : {}) };
    this.#park(this.#parking);
    return never();
  }
}

/** A promise that never settles: the code after a wait that parked runs in a later attempt, not this one. */
function never(): Promise<never> {
  return new Promise<never>(() => undefined);
}

function iso(at: number): string {
  return new Date(at).toISOString();
}

function retryPolicy(given: SchedulingInput['retry'], step: string): RetryPolicy {
  const parsed = RetryPolicySchema.safeParse(given ?? {});
  if (parsed.success) return parsed.data;
  throw new InvalidInputError(`The retry policy of step '${step}' is invalid: ${describeIssues(parsed.error)}`);
}

function eventOutcome(outcome: WaitOutcome): EventOutcome {
  if ('timedOut' in outcome) return { timedOut: true };
  if ('name' in outcome) return { timedOut: false, data: outcome.data };
  throw new Error(`not an event wait's outcome: ${JSON.stringify(outcome)}`);
}

function answerOf(outcome: WaitOutcome, method: string, taskId: string): Record<string, unknown> {
  if ('answer' in outcome) {
    const { answer } = outcome;
    if ('result' in answer) return answer.result;
    throw new LocalError(
      LocalErrorCode.InputError,
      `The client answered ${method} with error ${answer.error.code}: ${answer.error.message}`,
      { error: answer.error, taskId },
    );
  }
  if ('timedOut' in outcome) {
    throw new LocalError(LocalErrorCode.InputTimeout, `The client did not answer ${method} in time`, { taskId });
  }
  throw new Error(`not an input wait's outcome: ${JSON.stringify(outcome)}`);
}
