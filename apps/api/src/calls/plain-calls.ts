// Plain calls: a tools/call that is not a task still runs on a worker, through a record of kind
// TaskKind.PlainToolCall that the client never sees. This module owns their life after startCall wrote them: the
// session's entry by JSON-RPC request id, wait, answer, abandon, cancel by request id (notifications/cancelled),
// delete, and the hand-out of a call still running at its handle deadline (a task handle: the record becomes a task
// the client follows with the handle tools, calls/handles.ts). The entry of a call leaves the session's hash when the
// call ends or is handed out.
import type { KeySpace, RedisClient, SessionEvents, TaskService, TaskStore, Waiter } from '@mcp-tasks/engine';
import {
  CallGoneError,
  isTerminal,
  plainResultOf,
  TaskKind,
  TaskStatus,
  type JsonRpcId,
  type TaskRecord,
} from '@mcp-tasks/protocol';

export interface PlainCallsDeps {
  redis: RedisClient;
  keys: KeySpace;
  store: TaskStore;
  tasks: TaskService;
  events: SessionEvents;
  /** RESULT_STREAM_AFTER_MS: a call still running after this long is answered on an SSE stream, if it may be. */
  streamAfterMs: number;
}

/** The request a plain call answers (a RequestContext is one). */
export interface PlainCallRequest {
  session: { sessionId: string; owner: string };
  requestId: JsonRpcId;
  /** Aborts when the client closes the HTTP request before the answer. */
  signal: AbortSignal;
  /** The client accepts an SSE answer. */
  canStream: boolean;
  /** When a call still running is handed out (epoch ms; TaskHandles.deadline); absent: never. */
  handAt?: number;
}

type CallRef = Pick<TaskRecord, 'taskId' | 'sessionId'>;

/**
 * How a plain call is answered: its result now, on a stream of its messages that starts at `since`, or with a handle
 * to the task it became (`handedOut`: the record as a task).
 */
export type PlainAnswer =
  | { answered: Record<string, unknown> }
  | { streaming: { record: TaskRecord; since: string } }
  | { handedOut: TaskRecord };

/** The request a notifications/cancelled names and why; undefined for any other notification. */
export function cancelledRequestOf(notification: {
  method: string;
  params?: Record<string, unknown> | undefined;
}): { requestId: JsonRpcId; reason: string } | undefined {
  if (notification.method !== 'notifications/cancelled') return undefined;
  const requestId = notification.params?.['requestId'];
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return undefined;
  const reason = notification.params?.['reason'];
  return {
    requestId,
    reason: typeof reason === 'string' && reason !== '' ? reason.slice(0, 200) : 'The client cancelled the request.',
  };
}

export class PlainCalls {
  constructor(private readonly deps: PlainCallsDeps) {}

  /**
   * Files the call (just written by startCall) under its request id, and answers it: as JSON when it ends within
   * RESULT_STREAM_AFTER_MS, else on a stream of its progress and input requests from `since` on (as tasks/result
   * does); without `since` (no SSE), as JSON after the whole wait. `since` is the session's stream position read
   * before the call was written, so that the stream misses none of its messages. A call still running at
   * `request.handAt` is handed out instead (as JSON; a stream hands it out itself, streams.ts). `waiter`: the one
   * TaskService.createWatched opened before the record was written (closed here); without it, the wait reads first.
   */
  async answer(
    request: PlainCallRequest,
    record: TaskRecord,
    since: Promise<string> | undefined,
    waiter?: Waiter,
  ): Promise<PlainAnswer> {
    // Filed while the call runs (sent at once, answered during the wait): the entry is in before the call is
    // deleted, which the same connection sends later, and before the answer goes out.
    const remembered = this.#remember(record, request.requestId);
    remembered.catch(() => undefined); // awaited below; a wait that fails first must not leave it unhandled
    try {
      const answer = await this.#answerFiled(request, record, since, remembered, waiter);
      await remembered;
      return answer;
    } finally {
      await waiter?.close();
    }
  }

  async #answerFiled(
    request: PlainCallRequest,
    record: TaskRecord,
    since: Promise<string> | undefined,
    remembered: Promise<void>,
    waiter: Waiter | undefined,
  ): Promise<PlainAnswer> {
    const { handAt } = request;
    // The record as created, with the waiter opened before it was written: the first wait needs no read.
    const first = waiter ? { record, waiter, remembered } : { remembered };
    if (!since) {
      const waited = await this.#answer(record, request, handAt !== undefined ? { until: handAt } : {}, first);
      if ('answered' in waited) return waited;
      await remembered;
      return this.#handOutOrAnswer(waited.live, request);
    }
    const streamAt = Date.now() + this.deps.streamAfterMs;
    let live = record;
    if (this.deps.streamAfterMs > 0) {
      const until = handAt !== undefined ? Math.min(handAt, streamAt) : streamAt;
      const waited = await this.#answer(record, request, { until, untilInput: true }, first);
      if ('answered' in waited) return waited;
      live = waited.live;
    }
    await remembered;
    if (handAt !== undefined && Date.now() >= handAt) return this.#handOutOrAnswer(live, request);
    return { streaming: { record, since: await since } };
  }

  /**
   * Hands the call out as a task (hand-out-2.lua) and forgets its request id (a 2025-11-25 call's): its answer is now
   * the handle, and its record lives on as a task until its expiry. Undefined when the call ended first (its result is
   * the answer) or is gone. `record` is the call as last read: the handle shows it.
   */
  async handOut(record: TaskRecord, requestId?: JsonRpcId): Promise<TaskRecord | undefined> {
    const { verdict, status } = await this.deps.store.handOut(record);
    if (verdict !== 'handed') return undefined;
    // A 2026-07-28 call was never filed under its request id (no session to cancel it through): no entry to forget.
    if (requestId !== undefined) await this.#forget(record.sessionId, requestId);
    return { ...record, kind: TaskKind.Task, ...(status !== undefined ? { status } : {}) };
  }

  /** At the handle deadline: the handle, or the result of a call that ended in the meantime. */
  async #handOutOrAnswer(record: TaskRecord, request: PlainCallRequest): Promise<PlainAnswer> {
    const handed = await this.handOut(record, request.requestId);
    if (handed) return { handedOut: handed };
    const waited = await this.#answer(record, request, {});
    if (!('answered' in waited)) throw new CallGoneError('The call could not be handed out nor answered');
    return waited;
  }

  /** The call's record for its answer stream, or -32603 once it is gone (answered elsewhere, or expired). */
  async read(taskId: string, owner: string): Promise<TaskRecord> {
    // Watched: its changes wake this replica's answer stream (TaskService.wakeOn).
    const record = await this.deps.store.getOwned(taskId, owner, this.deps.tasks.watcherId);
    if (!record) throw new CallGoneError();
    return record;
  }

  /** Forgets an answered call: its record and its entry by request id. */
  async delete(record: TaskRecord, requestId: JsonRpcId): Promise<void> {
    await Promise.all([this.deps.store.delete(record), this.#forget(record.sessionId, requestId)]);
  }

  /** Stops a call nobody waits for any more (its request closed, or no stream was free for it) and deletes it. */
  async abandon(call: CallRef, requestId: JsonRpcId, reason: string): Promise<void> {
    const record = await this.deps.store.get(call.taskId);
    if (record && !isTerminal(record.status)) await this.deps.tasks.cancel(record, reason).catch(() => undefined);
    await (record ? this.delete(record, requestId) : this.#forget(call.sessionId, requestId));
  }

  /**
   * notifications/cancelled: cancels the session's call `requestId`, whose waiter then answers -32800 and deletes
   * it. Unknown ids, another owner's call and ended calls are ignored (answers true when a call was cancelled).
   */
  async cancel(session: { sessionId: string; owner: string }, requestId: JsonRpcId, reason: string): Promise<boolean> {
    const key = this.deps.keys.sessionCalls(session.sessionId);
    const taskId = await this.deps.redis.hget(key, JSON.stringify(requestId));
    if (!taskId) return false;
    await this.#forget(session.sessionId, requestId);
    const record = await this.deps.store.get(taskId);
    if (!record || record.owner !== session.owner || isTerminal(record.status)) return false;
    await this.deps.tasks.cancel(record, reason).catch(() => undefined);
    return true;
  }

  /**
   * Waits for the call to end, answers its result or error, and deletes it. Gives up at `limit.until` (epoch ms), and
   * with `untilInput` once the call needs its client, answering the call as it is then (`live`: the caller streams or
   * hands out instead).
   */
  async #answer(
    record: TaskRecord,
    { signal, requestId }: PlainCallRequest,
    limit: { until?: number; untilInput?: boolean },
    filed: { record?: TaskRecord; waiter?: Waiter; remembered?: Promise<void> } = {},
  ): Promise<{ answered: Record<string, unknown> } | { live: TaskRecord }> {
    // One script: the record read (the replica is among its waiters already: named at its creation, or by the
    // first read of this wait, which names it when it is not) and, once the call has ended, deleted in the same
    // step with its entry by request id: the answer follows one round trip after the wake-up.
    let deleted = false;
    const read = async () => {
      // Filed before it is forgotten: the entry of a call that ended cannot outlive it.
      await filed.remembered;
      const taken = await this.deps.store.takeEnded(record, this.deps.tasks.watcherId, JSON.stringify(requestId));
      if (!taken.record) throw new CallGoneError('The call expired before it finished');
      deleted = taken.deleted;
      return taken.record;
    };
    try {
      const current = await this.deps.tasks.waitFor(record.taskId, {
        signal,
        read,
        ...(filed.record && filed.waiter ? { first: filed.record, waiter: filed.waiter } : {}),
        ...(limit.until !== undefined ? { withinMs: Math.max(0, limit.until - Date.now()) } : {}),
        ...(limit.untilInput ? { until: (live: TaskRecord) => live.status === TaskStatus.InputRequired } : {}),
      });
      if (!isTerminal(current.status)) return { live: current };
      // Ended before the wait read it (the record `first` was ended already): deleted here instead.
      if (!deleted) {
        await filed.remembered;
        await this.delete(current, requestId);
      }
      return { answered: plainResultOf(current) };
    } catch (error) {
      // The client went away: stop the work it no longer waits for.
      if (signal.aborted) {
        await filed.remembered?.catch(() => undefined);
        await this.abandon(record, requestId, 'The client closed the request.');
      }
      throw error;
    }
  }

  /**
   * Files the call under its request id, for notifications/cancelled. The hash lives as long as its longest-lived
   * call may (NX sets the first expiry, GT only ever extends it): a short call never cuts a longer one's entry
   * short, and the entries themselves leave as their calls end.
   */
  async #remember(record: TaskRecord, requestId: JsonRpcId): Promise<void> {
    const key = this.deps.keys.sessionCalls(record.sessionId);
    await this.deps.redis
      .multi()
      .hset(key, JSON.stringify(requestId), record.taskId)
      .pexpire(key, record.ttl, 'NX')
      .pexpire(key, record.ttl, 'GT')
      .exec();
  }

  async #forget(sessionId: string, requestId: JsonRpcId): Promise<void> {
    await this.deps.redis.hdel(this.deps.keys.sessionCalls(sessionId), JSON.stringify(requestId));
  }
}
