// Plain calls: a tools/call that is not a task still runs on a worker, through a record of kind
// TaskKind.PlainToolCall that the client never sees. This module owns their life after startCall wrote them (a
// 2025-11-25 call with its session's entry by JSON-RPC request id, `requestKeyOf`, in the same step): abandon, cancel
// by request id (notifications/cancelled), delete, and the hand-out of a call still running at its handle deadline (a
// task handle: the record becomes a task the client follows with the handle tools, calls/handles.ts); awaiting one is
// the one wait of calls/await-task.ts. The entry of a call leaves the session's hash when the call ends or is handed
// out.
import type { SessionCalls, SessionEvents, TaskService, TaskStore } from '@mcp-tasks/engine';
import { CallGoneError, isTerminal, TaskKind, type JsonRpcId, type TaskRecord } from '@mcp-tasks/protocol';

export interface PlainCallsDeps {
  /** The session's calls by request id (the engine's). */
  calls: SessionCalls;
  store: TaskStore;
  tasks: TaskService;
  events: SessionEvents;
}

type CallRef = Pick<TaskRecord, 'taskId' | 'sessionId'>;

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

/**
 * The field a 2025-11-25 call is filed under in its session's calls hash: its request id as JSON (1 and "1" differ).
 * The step that creates the call files it (startCall's `filed`), for notifications/cancelled.
 */
export function requestKeyOf(requestId: JsonRpcId): string {
  return JSON.stringify(requestId);
}

export class PlainCalls {
  constructor(private readonly deps: PlainCallsDeps) {}

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

  /**
   * The call's record for its answer (a wait, its answer stream), or -32603 once it is gone (answered elsewhere, or
   * expired), saying `gone`.
   */
  async read(taskId: string, owner: string, gone?: string): Promise<TaskRecord> {
    // Watched: its changes wake this replica's waiter (TaskService.wakeOn).
    const record = await this.deps.store.getOwned(taskId, owner, this.deps.tasks.watcherId);
    if (!record) throw new CallGoneError(gone);
    return record;
  }

  /**
   * The call's record for the request that waits for it (a read with `read`'s watch), and, once the call has ended,
   * deleted with its entry by request id in the same step (TaskStore.takeEnded): the answer follows one round trip
   * after the wake-up. A record so taken is deleted already when `delete` is asked for it. -32603 once the call is
   * gone, saying `gone`.
   */
  async take(record: TaskRecord, requestId: JsonRpcId, gone?: string): Promise<TaskRecord> {
    const taken = await this.deps.store.takeEnded(record, this.deps.tasks.watcherId, requestKeyOf(requestId));
    if (!taken.record) throw new CallGoneError(gone);
    if (taken.deleted) this.#taken.add(taken.record);
    return taken.record;
  }

  /** Records `take` deleted with their entries: nothing is left for `delete` to do. */
  readonly #taken = new WeakSet<TaskRecord>();

  /** Forgets an answered call: its record and its entry by request id. */
  async delete(record: TaskRecord, requestId: JsonRpcId): Promise<void> {
    if (this.#taken.has(record)) return;
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
    const taskId = await this.deps.calls.taskOf(session.sessionId, requestKeyOf(requestId));
    if (!taskId) return false;
    await this.#forget(session.sessionId, requestId);
    const record = await this.deps.store.get(taskId);
    if (!record || record.owner !== session.owner || isTerminal(record.status)) return false;
    await this.deps.tasks.cancel(record, reason).catch(() => undefined);
    return true;
  }

  #forget(sessionId: string, requestId: JsonRpcId): Promise<void> {
    return this.deps.calls.forget(sessionId, requestKeyOf(requestId));
  }
}
