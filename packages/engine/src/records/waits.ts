// What a parked task waits for (docs/durable-execution.md, "Waits"): its waits in its durable hash (`w:<key>`, beside
// its steps), the events sent to it that no wait took yet (a list that expires with it), the record's `wait` field
// while its job is parked, and one sorted set per kind of wait of the parked tasks, which operators count and list.
import {
  LocalError,
  LocalErrorCode,
  WAIT_KINDS,
  WaitKind,
  type JsonRpcErrorObject,
  type TaskRecord,
  type TaskWait,
} from '@mcp-tasks/protocol';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';
import { RedisScripts, type DurableRefusalReply } from '../scripts.ts';
import type { TaskKeys } from './keys.ts';

const WAIT_PREFIX = 'w:';
const TRIES_PREFIX = 'tries:';

/** What a wait came to, as its durable hash keeps it (the JSON under `outcome`). */
export type WaitOutcome =
  | { slept: true }
  | { timedOut: true }
  /** An event: its name, when it was sent (epoch ms) and its data (absent: none). */
  | { name: string; at: number; data?: unknown }
  /** A client's answer to a parked input request. */
  | { answer: { result: Record<string, unknown> } | { error: JsonRpcErrorObject } };

/** A wait stored by an earlier attempt and not over yet (its JSON in the durable hash). */
export interface PendingWait {
  kind: WaitKind;
  until: number;
  name?: string;
  requestId?: string;
}

/** A wait as an attempt reads it from its snapshot: its outcome, or what it waits for. */
export type StoredWait = { outcome: WaitOutcome } | { pending: PendingWait };

/** A parked task as operators list it. */
export interface ParkedTask {
  taskId: string;
  kind: WaitKind;
  /** Epoch ms. */
  until: number;
}

export interface ParkCall {
  /** The attempt parking (its fence). */
  attempt: number;
  key: string;
  kind: WaitKind;
  /** When a new wait ends (a wait stored already keeps its own). */
  until: number;
  /** The event's name (event), the request's method (input). */
  name?: string;
  /** The parked input request (input). */
  requestId?: string;
  /** DURABLE_MAX_STEPS. */
  maxEntries: number;
  /** DURABLE_MAX_WAITS. */
  maxWaits: number;
}

export type Parked = { parked: number } | { outcome: WaitOutcome };

/** An event sent to a task: what came of it. */
export type SignalVerdict =
  | { verdict: 'delivered'; tool: string }
  | { verdict: 'kept'; count: number }
  | { verdict: 'full'; count: number }
  | { verdict: 'ended'; status: TaskRecord['status'] }
  | { verdict: 'missing' };

/** A wait as the snapshot of an attempt holds it (DurableSnapshot.waits), read. */
export function readStoredWait(json: string): StoredWait {
  const value = JSON.parse(json) as { outcome?: WaitOutcome } & PendingWait;
  return value.outcome !== undefined ? { outcome: value.outcome } : { pending: value };
}

/** The snapshot key (DurableSnapshot.waits) of the failed tries of a step with a retry policy (note-tries-2.lua). */
export function stepTriesKey(step: string): string {
  return `${TRIES_PREFIX}${step}`;
}

export class WaitStore {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly tasks: TaskKeys,
    private readonly keys: KeySpace,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /**
   * Parks the task on a wait, or answers its outcome when it has one already (an event kept for it, a timeout, a
   * sleep that is over). Refused with the LocalError the tool gets (park-wait-4.lua).
   */
  async park(task: Pick<TaskRecord, 'taskId'>, call: ParkCall): Promise<Parked> {
    const { taskId } = task;
    const { kind, until, name, requestId, key } = call;
    const wait: TaskWait = {
      kind,
      until,
      key,
      ...(name !== undefined ? { name } : {}),
      ...(requestId !== undefined ? { requestId } : {}),
    };
    const reply = await this.#scripts.parkWait({
      keys: {
        record: this.tasks.record(taskId),
        durable: this.tasks.durable(taskId),
        signals: this.tasks.signals(taskId),
        waiting: this.tasks.waiting(kind),
      },
      taskId,
      attempt: call.attempt,
      field: `${WAIT_PREFIX}${key}`,
      kind,
      until,
      pending: JSON.stringify({
        kind,
        until,
        ...(name !== undefined ? { name } : {}),
        ...(requestId ? { requestId } : {}),
      }),
      wait: JSON.stringify(wait),
      ...(kind === WaitKind.Event && name !== undefined ? { prefix: eventPrefix(name) } : {}),
      now: Date.now(),
      maxEntries: call.maxEntries,
      maxWaits: call.maxWaits,
    });
    switch (reply.verdict) {
      case 'parked':
        return { parked: reply.until };
      case 'resolved':
        return { outcome: outcomeOf(reply.value) };
      case 'too-many':
        throw new LocalError(
          LocalErrorCode.LimitExceeded,
          `Task ${taskId} has waited ${reply.count} times already, the most DURABLE_MAX_WAITS allows: it cannot wait again`,
          { taskId, waits: reply.count },
        );
      default:
        throw waitRefusal(taskId, reply);
    }
  }

  /**
   * The client's answer to a parked input request, or its timeout (which withdraws the request: `withdrawn`, the
   * caller tells the client); `pending` while neither came (take-input-4.lua).
   */
  async takeInput(
    task: Pick<TaskRecord, 'taskId' | 'sessionId'>,
    call: { attempt: number; key: string; requestId: string; until: number },
  ): Promise<{ outcome: WaitOutcome; withdrawn: boolean } | 'pending'> {
    const { taskId, sessionId } = task;
    const reply = await this.#scripts.takeInput({
      keys: {
        record: this.tasks.record(taskId),
        durable: this.tasks.durable(taskId),
        request: this.keys.inputRequest(call.requestId),
        sessionInputs: this.keys.sessionInputs(sessionId),
      },
      attempt: call.attempt,
      field: `${WAIT_PREFIX}${call.key}`,
      requestId: call.requestId,
      until: call.until,
      now: Date.now(),
    });
    switch (reply.verdict) {
      case 'pending':
        return 'pending';
      case 'resolved':
      case 'withdrawn':
        return { outcome: outcomeOf(reply.value), withdrawn: reply.verdict === 'withdrawn' };
      default:
        throw waitRefusal(taskId, reply);
    }
  }

  /**
   * The attempt that runs after a wake: the record no longer says the task waits, and the task leaves the waiting
   * set (an event's delivery did both already). The wait itself stays in the durable hash, for the replay.
   */
  async resume(task: Pick<TaskRecord, 'taskId' | 'wait'>): Promise<void> {
    const { wait, taskId } = task;
    if (!wait) return;
    await this.redis.multi().hdel(this.tasks.record(taskId), 'wait').zrem(this.tasks.waiting(wait.kind), taskId).exec();
  }

  /**
   * A parked task that ends otherwise (cancelled): as `resume`, and a parked input request is withdrawn (deleted, so
   * that a late answer is refused as for an unknown request, and no longer shown to the client). Answers the id of
   * the request withdrawn, if any, for the caller to tell the client.
   */
  async abandon(task: Pick<TaskRecord, 'taskId' | 'sessionId' | 'wait'>): Promise<string | undefined> {
    const { wait, taskId, sessionId } = task;
    if (!wait) return undefined;
    const multi = this.redis
      .multi()
      .hdel(this.tasks.record(taskId), 'wait')
      .zrem(this.tasks.waiting(wait.kind), taskId);
    if (wait.requestId !== undefined) {
      multi.del(this.keys.inputRequest(wait.requestId)).hdel(this.keys.sessionInputs(sessionId), wait.requestId);
    }
    const replies = await multi.exec();
    // Withdrawn by this call (not answered and taken, nor withdrawn, already).
    return wait.requestId !== undefined && replies?.[2]?.[1] === 1 ? wait.requestId : undefined;
  }

  /** Sends an event to the task; `owner` undefined for an operator or a callback token (signal-task-4.lua). */
  async signal(
    taskId: string,
    event: { owner?: string; name: string; at: number; data?: string; maxKept: number },
  ): Promise<SignalVerdict> {
    return this.#scripts.signalTask({
      keys: {
        record: this.tasks.record(taskId),
        durable: this.tasks.durable(taskId),
        signals: this.tasks.signals(taskId),
        waiting: this.tasks.waiting(WaitKind.Event),
      },
      taskId,
      ...(event.owner !== undefined ? { owner: event.owner } : {}),
      name: event.name,
      entry: eventEntry(event.name, event.at, event.data),
      maxKept: event.maxKept,
    });
  }

  /**
   * Whether a wait has its outcome now, or the client's answer to its input request (`requestId`) came: a parked
   * attempt checks, once its job is delayed, that none came meanwhile.
   */
  async settled(taskId: string, key: string, requestId?: string): Promise<boolean> {
    if (requestId !== undefined) return (await this.redis.hexists(this.keys.inputRequest(requestId), 'response')) === 1;
    const stored = await this.redis.hget(this.tasks.durable(taskId), `${WAIT_PREFIX}${key}`);
    return stored !== null && 'outcome' in readStoredWait(stored);
  }

  /** Counts a failed try of a step with a retry policy of its own (0: forgets the count). */
  async noteTries(
    task: Pick<TaskRecord, 'taskId'>,
    call: { attempt: number; step: string; tries: number; maxEntries: number },
  ): Promise<void> {
    const { taskId } = task;
    const reply = await this.#scripts.noteTries({
      keys: { record: this.tasks.record(taskId), durable: this.tasks.durable(taskId) },
      attempt: call.attempt,
      field: `${WAIT_PREFIX}${stepTriesKey(call.step)}`,
      tries: call.tries,
      maxEntries: call.maxEntries,
    });
    if (reply.verdict !== 'ok') throw waitRefusal(taskId, reply);
  }

  /** How many tasks are parked on each kind of wait (one command per kind, whatever their number). */
  async counts(): Promise<Record<WaitKind, number>> {
    const replies = await Promise.all(WAIT_KINDS.map((kind) => this.redis.zcard(this.tasks.waiting(kind))));
    return Object.fromEntries(WAIT_KINDS.map((kind, i) => [kind, replies[i] ?? 0])) as Record<WaitKind, number>;
  }

  /** The parked tasks, those due first, at most `limit` of each kind. */
  async parked(limit: number): Promise<ParkedTask[]> {
    const lists = await Promise.all(
      WAIT_KINDS.map((kind) => this.redis.zrange(this.tasks.waiting(kind), '0', String(limit - 1), 'WITHSCORES')),
    );
    const parked: ParkedTask[] = [];
    lists.forEach((flat, i) => {
      for (let at = 0; at + 1 < flat.length; at += 2) {
        parked.push({ taskId: String(flat[at]), kind: WAIT_KINDS[i] as WaitKind, until: Number(flat[at + 1]) });
      }
    });
    return parked.sort((a, b) => a.until - b.until);
  }

  /** What operators see of one task's waits: how many it made, and the events kept for it (one round trip). */
  async facts(taskId: string): Promise<{ waits: number; eventsKept: number }> {
    const replies =
      (await this.redis.pipeline().hget(this.tasks.record(taskId), 'waits').llen(this.tasks.signals(taskId)).exec()) ??
      [];
    return { waits: Number(replies[0]?.[1] ?? 0), eventsKept: Number(replies[1]?.[1] ?? 0) };
  }

  /** Forgets tasks that are no longer parked (ended, expired) found in the waiting sets by a reader. */
  async forget(entries: readonly Pick<ParkedTask, 'taskId' | 'kind'>[]): Promise<void> {
    if (entries.length === 0) return;
    const multi = this.redis.multi();
    for (const { taskId, kind } of entries) multi.zrem(this.tasks.waiting(kind), taskId);
    await multi.exec();
  }
}

/** How the JSON of a kept event of `name` starts (eventEntry): what park-wait-4.lua looks for. */
function eventPrefix(name: string): string {
  return `{"name":${JSON.stringify(name)},`;
}

/** A kept event's JSON, `data` its JSON text (absent: none): the name first (eventPrefix). */
function eventEntry(name: string, at: number, data: string | undefined): string {
  return `${eventPrefix(name)}"at":${at}${data !== undefined ? `,"data":${data}` : ''}}`;
}

function outcomeOf(value: string): WaitOutcome {
  return (JSON.parse(value) as { outcome: WaitOutcome }).outcome;
}

/** Why a wait could not be stored, as the LocalError its tool gets. */
function waitRefusal(taskId: string, reply: DurableRefusalReply): LocalError {
  switch (reply.verdict) {
    case 'missing':
      return new LocalError(LocalErrorCode.TaskEnded, `Task ${taskId} expired or was deleted: it cannot wait`, {
        taskId,
      });
    case 'ended':
      return new LocalError(LocalErrorCode.TaskEnded, `Task ${taskId} is ${reply.status}: it cannot wait`, {
        taskId,
        status: reply.status,
      });
    case 'stale':
      return new LocalError(
        LocalErrorCode.AttemptSuperseded,
        `A later attempt (${reply.attempt}) runs task ${taskId} now: this one can no longer wait`,
        { taskId, attempt: reply.attempt },
      );
    case 'full':
      return new LocalError(
        LocalErrorCode.DurableFull,
        `Task ${taskId} keeps ${reply.count} checkpoints, step results, child tasks and waits already, the most ` +
          'DURABLE_MAX_STEPS allows: it cannot wait',
        { taskId, count: reply.count },
      );
  }
}
