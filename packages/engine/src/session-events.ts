// The per-session event stream: every message the server has for a session's client (status notifications,
// progress, elicitation and sampling requests) goes into one Redis stream. SSE event ids are stream ids, so a
// client that reconnects to any api replica resumes exactly where it left off.
import { inputRequestOf, isTaskStatus, type InputRequest, type TaskFacts, type TaskRecord } from '@mcp-tasks/protocol';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import type { SessionStreamOptions } from './records/store.ts';
import { hashOf, RedisScripts } from './scripts.ts';

/**
 * One entry of a session's event stream: a JSON-RPC message written as it is sent (progress, input requests,
 * and the status notifications of older versions), or a task's status change as the transition script wrote it,
 * which the reader renders for its wire (`taskStatusNotification` for 2025-11-25).
 */
export type StreamEvent = StreamMessage | StreamStatusChange;

export interface StreamMessage {
  /** Redis stream id, e.g. "1733150000000-0". */
  id: string;
  /** The task the message relates to, if any. */
  taskId: string | undefined;
  message: Record<string, unknown>;
}

export interface StreamStatusChange {
  id: string;
  taskId: string;
  status: TaskFacts;
}

export interface PendingInput {
  requestId: string;
  taskId: string;
  message: Record<string, unknown>;
  /** The name the tool gave the request (AskOptions.key): the 2026-07-28 wire shows it as the request's key. */
  key?: string;
}

const RESULT_STREAM_LEASE_MS = 30_000;

export class SessionEvents {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly streams: SessionStreamOptions,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  async append(sessionId: string, taskId: string | undefined, message: Record<string, unknown>): Promise<void> {
    const key = this.keys.sessionEvents(sessionId);
    await this.redis
      .multi()
      .xadd(key, 'MAXLEN', '~', this.streams.maxLength, '*', 'taskId', taskId ?? '', 'message', JSON.stringify(message))
      .pexpire(key, this.streams.idleMs)
      .publish(this.keys.sessionChannel(sessionId), '1')
      .exec();
  }

  /** Events after `afterId` (exclusive), oldest first. */
  async after(sessionId: string, afterId: string, count = 200): Promise<StreamEvent[]> {
    const entries = await this.redis.xrange(this.keys.sessionEvents(sessionId), `(${afterId}`, '+', 'COUNT', count);
    return entries.map(([id, fields]) => decodeEvent(id, hashOf(fields)));
  }

  /**
   * Deletes the entries (status, progress, input requests) of expired tasks from their sessions' event streams,
   * `taskIds` by session, in two round trips whatever the number of sessions. Each stream is capped (about
   * `maxLength` entries), so reading one whole is bounded.
   */
  async dropTaskEvents(taskIds: ReadonlyMap<string, ReadonlySet<string>>): Promise<void> {
    if (taskIds.size === 0) return;
    const sessions = [...taskIds.keys()];
    const reads = this.redis.pipeline();
    for (const sessionId of sessions) reads.xrange(this.keys.sessionEvents(sessionId), '-', '+');
    const replies = (await reads.exec()) ?? [];
    const deletes = this.redis.pipeline();
    sessions.forEach((sessionId, i) => {
      const [error, entries] = replies[i] ?? [];
      if (error) throw error;
      const dropped = taskIds.get(sessionId) as ReadonlySet<string>;
      const ids = (entries as [string, string[]][]).flatMap(([id, fields]) =>
        dropped.has(hashOf(fields)['taskId'] ?? '') ? [id] : [],
      );
      const key = this.keys.sessionEvents(sessionId);
      for (let at = 0; at < ids.length; at += 500) deletes.xdel(key, ...ids.slice(at, at + 500));
    });
    if (deletes.length === 0) return;
    const failure = ((await deletes.exec()) ?? []).find(([error]) => error);
    if (failure?.[0]) throw failure[0];
  }

  /** The id of the newest event, or "0-0" for an empty stream: where a new reader starts. */
  async lastId(sessionId: string): Promise<string> {
    const [newest] = await this.redis.xrevrange(this.keys.sessionEvents(sessionId), '+', '-', 'COUNT', 1);
    return newest?.[0] ?? '0-0';
  }

  /**
   * Takes an answered input request off the session's outstanding ones at once, rather than when its worker wakes
   * up, so that a read right after the answer no longer shows it (the tasks extension's read-your-writes, X-UPD-5).
   */
  async withdrawInput(sessionId: string, requestId: string): Promise<void> {
    await this.redis.hdel(this.keys.sessionInputs(sessionId), requestId);
  }

  /** Input requests still waiting for this session's client. */
  async pendingInputs(sessionId: string): Promise<PendingInput[]> {
    const all = await this.redis.hgetall(this.keys.sessionInputs(sessionId));
    return Object.entries(all).map(([requestId, raw]) => {
      const { taskId, message, key } = JSON.parse(raw) as {
        taskId: string;
        message: Record<string, unknown>;
        key?: string;
      };
      return { requestId, taskId, message, ...(key !== undefined ? { key } : {}) };
    });
  }

  /**
   * A task's input requests still waiting for an answer, keyed by the ids its client is shown (unique for the task's
   * life), as the 2026-07-28 wire inlines them in tasks/get (X-GET-6) and a webhook's body carries them.
   */
  async outstandingInputs(task: Pick<TaskRecord, 'taskId' | 'sessionId'>): Promise<Record<string, InputRequest>> {
    const inputs: Record<string, InputRequest> = {};
    for (const pending of await this.pendingInputs(task.sessionId)) {
      if (pending.taskId !== task.taskId) continue;
      const request = inputRequestOf(pending.message);
      if (request) inputs[pending.key ?? pending.requestId] = request;
    }
    return inputs;
  }

  /**
   * Marks a tasks/result stream of `taskId` as open, so that the session's GET stream leaves that task's messages
   * to it (the transport sends each message on one stream only). Returns a function that renews the lease and
   * one that ends it.
   */
  leaseAnswerStream(
    sessionId: string,
    taskId: string,
    streamId: string,
  ): { renew(): Promise<void>; close(): Promise<void> } {
    const key = this.keys.answerStreamLeases(sessionId);
    const member = `${taskId}|${streamId}`;
    const renew = async () => {
      await this.redis
        .multi()
        .zadd(key, Date.now() + RESULT_STREAM_LEASE_MS, member)
        .pexpire(key, RESULT_STREAM_LEASE_MS * 2)
        .exec();
    };
    return { renew, close: async () => void (await this.redis.zrem(key, member)) };
  }

  /**
   * Claims the delivery of an input request for one kind of stream, so the client gets it on one stream only: a
   * request the GET stream delivered is not repeated by a tasks/result stream opened later, and vice versa. The
   * same kind may deliver it again (a new tasks/result call, a resumed GET stream). False once it was answered.
   */
  async claimDelivery(requestId: string, via: 'get' | 'result'): Promise<boolean> {
    return this.#scripts.claimDelivery({ keys: { request: this.keys.inputRequest(requestId) }, via });
  }

  /** Tasks that have a tasks/result stream open now. */
  async tasksWithAnswerStreams(sessionId: string): Promise<Set<string>> {
    const members = await this.redis.zrangebyscore(this.keys.answerStreamLeases(sessionId), Date.now(), '+inf');
    return new Set(members.map((member) => member.slice(0, member.indexOf('|'))));
  }

  static readonly resultStreamLeaseMs = RESULT_STREAM_LEASE_MS;
}

function decodeEvent(id: string, entry: Record<string, string>): StreamEvent {
  const taskId = entry['taskId'] || undefined;
  const status = entry['status'];
  if (entry['message'] === undefined && taskId !== undefined && isTaskStatus(status)) {
    const facts: TaskFacts = {
      taskId,
      status,
      createdAt: Number(entry['createdAt']),
      lastUpdatedAt: Number(entry['at']),
      ttl: Number(entry['ttl']),
      pollInterval: Number(entry['pollInterval']),
    };
    if (entry['statusMessage']) facts.statusMessage = entry['statusMessage'];
    return { id, taskId, status: facts };
  }
  return { id, taskId, message: JSON.parse(entry['message'] ?? '{}') as Record<string, unknown> };
}
