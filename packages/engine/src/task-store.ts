// The task records in Redis: creation, reads, atomic status transitions and listing by owner.
import {
  isTaskStatus,
  isTerminal,
  LocalError,
  sourcesOf,
  TaskKind,
  type ExternalRef,
  type Outcome,
  type Settlement,
  type TaskRecord,
  type TaskStatus,
} from '@mcp-tasks/protocol';
import type { KeySpace } from './keys.ts';
import { decodeCursor, encodeCursor, indexMember } from './list-cursor.ts';
import type { RedisClient } from './redis.ts';
import { RedisScripts } from './scripts.ts';

export type TransitionResult =
  | { ok: true; status: TaskStatus; lastUpdatedAt: number; changed: boolean }
  | { ok: false; reason: 'missing' }
  | { ok: false; reason: 'rejected'; current: TaskStatus };

export interface NewTask {
  record: TaskRecord;
  arguments: unknown;
  /** The most unfinished tasks (and plain calls) the owner may have, this one included; absent: no cap. */
  maxLiveTasksPerOwner?: number;
}

/** The owner already has as many unfinished tasks as allowed (MAX_TASKS_PER_OWNER). */
export class OwnerTaskLimitError extends LocalError {
  constructor(owner: string, limit: number) {
    super('owner-task-limit', `Owner already has ${limit} unfinished tasks`, { owner, limit });
  }
}

export interface TaskPage {
  tasks: TaskRecord[];
  nextCursor?: string;
}

/** Extra data kept beside the record for the worker and operators. */
export interface TaskDetails {
  arguments: unknown;
  progressToken?: string | number;
}

/**
 * Identifies a task for a transition: its session's event stream receives the status notification, and its
 * owner's set of unfinished tasks loses it when it ends.
 */
export type TaskRef = Pick<TaskRecord, 'taskId' | 'sessionId' | 'owner'>;

export interface SessionStreamOptions {
  /** A session's event stream expires this long after its last event (as the session itself). */
  idleMs: number;
  /** Events kept per session for resumption (approximate, Redis MAXLEN ~). */
  maxLength: number;
}

export const DEFAULT_SESSION_STREAM: SessionStreamOptions = { idleMs: 3_600_000, maxLength: 1000 };

export class TaskStore {
  readonly #redis: RedisClient;
  readonly #scripts: RedisScripts;
  readonly #observers: TaskObserver[] = [];

  constructor(
    redis: RedisClient,
    readonly keys: KeySpace,
    readonly streams: SessionStreamOptions = DEFAULT_SESSION_STREAM,
  ) {
    this.#redis = redis;
    this.#scripts = RedisScripts.on(redis);
  }

  /**
   * Writes the record, its owner-index entry and its expiry in one script, after admitting the task under the
   * owner's cap when there is one (a refused task leaves no trace). Invariant 2 starts here.
   */
  async create({ record, arguments: args, maxLiveTasksPerOwner }: NewTask): Promise<void> {
    const expiresAt = record.createdAt + record.ttl;
    const member = indexMember(record.createdAt, record.taskId);
    const { admitted } = await this.#scripts.createTask({
      keys: {
        record: this.keys.task(record.taskId),
        live: this.keys.live(),
        allTasks: this.keys.allTasks(),
        expiries: this.keys.expiries(),
        ownerIndex: this.keys.ownerIndex(record.owner),
        ownerLive: this.keys.ownerLive(record.owner),
      },
      taskId: record.taskId,
      expiresAt,
      now: record.lastUpdatedAt,
      maxLive: maxLiveTasksPerOwner,
      member,
      listed: record.kind === TaskKind.Task,
      expiryEntry: expiryEntry(record, member),
      fields: {
        ...serialize(record),
        arguments: JSON.stringify(args ?? {}),
        // Operators' status history; the transition script appends to it (see TaskAdmin.inspect).
        history: JSON.stringify([[record.createdAt, record.status, record.statusMessage ?? '']]),
      },
    });
    if (!admitted) throw new OwnerTaskLimitError(record.owner, maxLiveTasksPerOwner ?? 0);
    for (const observer of this.#observers) observer.created?.(record);
  }

  /** Adds an observer of creations and terminal transitions made through this store (metrics). */
  observe(observer: TaskObserver): void {
    this.#observers.push(observer);
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const hash = await this.#redis.hgetall(this.keys.task(taskId));
    return deserialize(hash);
  }

  /**
   * The record when `owner` owns it; undefined when it is missing, expired or someone else's. Both misses do the
   * same work and send nothing back, so they cannot be told apart by the answer or its timing (T-SEC-1).
   */
  async getOwned(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    return deserialize(await this.#scripts.getOwned({ keys: { record: this.keys.task(taskId) }, owner }));
  }

  async details(taskId: string): Promise<TaskDetails | undefined> {
    const [args, token] = await this.#redis.hmget(this.keys.task(taskId), 'arguments', 'progressToken');
    if (args === null || args === undefined) return undefined;
    const details: TaskDetails = { arguments: JSON.parse(args) as unknown };
    if (token) details.progressToken = JSON.parse(token) as string | number;
    return details;
  }

  /** Current statuses of many tasks in one round trip (undefined where the record is gone). */
  async statuses(taskIds: readonly string[]): Promise<(TaskStatus | undefined)[]> {
    if (taskIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of taskIds) pipeline.hget(this.keys.task(id), 'status');
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([, value]) => (isTaskStatus(value) ? value : undefined));
  }

  /**
   * Moves a task along the state machine; exactly one of racing transitions out of a status wins. With
   * `pendingDelta`, the count of outstanding input requests changes in the same step, and the status moves only
   * when that count says so (first request: to input_required; last answer: back to working).
   */
  async transition(
    task: TaskRef,
    to: TaskStatus,
    change: { statusMessage?: string; outcome?: Outcome; from?: readonly TaskStatus[]; pendingDelta?: -1 | 0 | 1 } = {},
  ): Promise<TransitionResult> {
    const { taskId, sessionId, owner } = task;
    const reply = await this.#scripts.transition({
      keys: {
        record: this.keys.task(taskId),
        live: this.keys.live(),
        events: this.keys.sessionEvents(sessionId),
        ownerLive: this.keys.ownerLive(owner),
      },
      taskId,
      to,
      from: change.from ?? sourcesOf(to),
      now: Date.now(),
      statusMessage: change.statusMessage,
      outcome: change.outcome ? JSON.stringify(change.outcome) : undefined,
      terminal: isTerminal(to),
      taskChannel: this.keys.taskChannel(taskId),
      sessionChannel: this.keys.sessionChannel(sessionId),
      stream: this.streams,
      pendingDelta: change.pendingDelta ?? 0,
    });
    if (reply.verdict === 'ok' && isTerminal(to)) {
      this.#finished(task, to, reply.lastUpdatedAt).catch(() => undefined);
    }
    if (reply.verdict === 'ok' || reply.verdict === 'unchanged') {
      return { ok: true, status: reply.status, lastUpdatedAt: reply.lastUpdatedAt, changed: reply.verdict === 'ok' };
    }
    if (reply.verdict === 'missing') return { ok: false, reason: 'missing' };
    return { ok: false, reason: 'rejected', current: reply.current };
  }

  settle(task: TaskRef, settlement: Settlement): Promise<TransitionResult> {
    return this.transition(task, settlement.status, settlement);
  }

  /** Changes the statusMessage of a task that is still `status`, without moving it (and moves lastUpdatedAt). */
  note(task: TaskRef, status: TaskStatus, statusMessage: string): Promise<TransitionResult> {
    return this.transition(task, status, { statusMessage, from: [status] });
  }

  /**
   * One page of an owner's tasks, newest first. Cost is O(log N + page) whatever N is: members are read by lexical
   * range and the records in one pipeline.
   */
  async list(owner: string, cursor: string | undefined, pageSize: number): Promise<TaskPage> {
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const index = this.keys.ownerIndex(owner);
    const members = (await this.#redis.call(
      'ZRANGE',
      index,
      after === undefined ? '+' : `(${after}`,
      '-',
      'BYLEX',
      'REV',
      'LIMIT',
      '0',
      String(pageSize + 1),
    )) as string[];
    const pageMembers = members.slice(0, pageSize);
    const pipeline = this.#redis.pipeline();
    for (const member of pageMembers) pipeline.hgetall(this.keys.task(taskIdOf(member)));
    const replies = (await pipeline.exec()) ?? [];
    const tasks: TaskRecord[] = [];
    const stale: string[] = [];
    replies.forEach(([, hash], i) => {
      const record = deserialize(hash as Record<string, string>);
      if (record) tasks.push(record);
      else stale.push(pageMembers[i] as string);
    });
    // Expired between janitor runs: drop from the index now rather than list a task tasks/get would not find.
    if (stale.length > 0) await this.#redis.zrem(index, ...stale);
    const last = pageMembers[pageMembers.length - 1];
    return members.length > pageSize && last !== undefined ? { tasks, nextCursor: encodeCursor(last) } : { tasks };
  }

  /** Deletes a record and its index entries at once (a plain call's record once its answer is sent). */
  async delete(
    record: Pick<TaskRecord, 'taskId' | 'owner' | 'createdAt' | 'kind'> & { sessionId?: string },
  ): Promise<void> {
    const member = indexMember(record.createdAt, record.taskId);
    // Without the sessionId the expiry entry stays; the janitor's later pass over it finds nothing left but events.
    const entries = [JSON.stringify([record.taskId, record.owner, member, record.kind])];
    if (record.sessionId !== undefined) entries.push(expiryEntry({ ...record, sessionId: record.sessionId }, member));
    await exec(
      this.#redis
        .multi()
        .del(this.keys.task(record.taskId))
        .zrem(this.keys.live(), record.taskId)
        .zrem(this.keys.expiries(), ...entries)
        .zrem(this.keys.ownerIndex(record.owner), member)
        .zrem(this.keys.allTasks(), member)
        .zrem(this.keys.ownerLive(record.owner), record.taskId),
    );
  }

  /** Tells observers about a terminal transition this process won; reads what they need only when there are some. */
  async #finished(ref: TaskRef, status: TaskStatus, at: number): Promise<void> {
    if (!this.#observers.some((observer) => observer.finished)) return;
    // The caller usually holds the whole record (a worker settling its task, the api cancelling one): no read then.
    const { taskId, owner, tool, kind, createdAt } = ref as Partial<TaskRecord> & TaskRef;
    if (owner !== undefined && tool !== undefined && kind !== undefined && createdAt !== undefined) {
      for (const observer of this.#observers) observer.finished?.({ taskId, owner, tool, kind, createdAt }, status, at);
      return;
    }
    const stored = await this.#redis.hmget(this.keys.task(taskId), 'tool', 'kind', 'createdAt', 'owner');
    const task = {
      taskId,
      owner: stored[3] ?? '',
      tool: stored[0] ?? '',
      kind: stored[1] === TaskKind.PlainCall ? TaskKind.PlainCall : TaskKind.Task,
      createdAt: Number(stored[2]),
    };
    for (const observer of this.#observers) observer.finished?.(task, status, at);
  }
}

/** Sees what goes through one TaskStore; each terminal transition is won by exactly one process. */
export interface TaskObserver {
  created?: (record: TaskRecord) => void;
  finished?: (
    task: Pick<TaskRecord, 'taskId' | 'owner' | 'tool' | 'kind' | 'createdAt'>,
    status: TaskStatus,
    at: number,
  ) => void;
}

/** A record from its Redis hash (HGETALL), or undefined when it is missing or past its ttl. */
export function recordFromHash(hash: Record<string, string> | null | undefined): TaskRecord | undefined {
  return deserialize(hash);
}

/**
 * The janitor's entry for a task (member of the expiries set): what it needs to delete once the record itself is
 * gone, the session included, whose event stream holds the task's notifications.
 */
function expiryEntry(record: Pick<TaskRecord, 'taskId' | 'owner' | 'kind' | 'sessionId'>, member: string): string {
  return JSON.stringify([record.taskId, record.owner, member, record.kind, record.sessionId]);
}

/** Parses an expiries member; entries written before the sessionId was added have none. */
export function parseExpiryEntry(entry: string): { taskId: string; owner: string; member: string; sessionId?: string } {
  const [taskId, owner, member, , sessionId] = JSON.parse(entry) as [string, string, string, string, string?];
  return { taskId, owner, member, ...(sessionId ? { sessionId } : {}) };
}

function taskIdOf(member: string): string {
  return member.slice(member.indexOf(':') + 1);
}

async function exec(multi: ReturnType<RedisClient['multi']>): Promise<void> {
  const replies = await multi.exec();
  const failure = replies?.find(([error]) => error);
  if (failure?.[0]) throw failure[0];
}

function serialize(record: TaskRecord): Record<string, string> {
  const fields: Record<string, string> = {
    taskId: record.taskId,
    kind: record.kind,
    status: record.status,
    createdAt: String(record.createdAt),
    lastUpdatedAt: String(record.lastUpdatedAt),
    ttl: String(record.ttl),
    pollInterval: String(record.pollInterval),
    owner: record.owner,
    sessionId: record.sessionId,
    tool: record.tool,
  };
  if (record.statusMessage) fields['statusMessage'] = record.statusMessage;
  if (record.outcome) fields['outcome'] = JSON.stringify(record.outcome);
  if (record.progressToken !== undefined) fields['progressToken'] = JSON.stringify(record.progressToken);
  if (record.external) fields['external'] = JSON.stringify(record.external);
  return fields;
}

function deserialize(hash: Record<string, string> | null | undefined): TaskRecord | undefined {
  if (!hash || hash['taskId'] === undefined || !isTaskStatus(hash['status'])) return undefined;
  const record: TaskRecord = {
    taskId: hash['taskId'],
    kind: hash['kind'] === TaskKind.PlainCall ? TaskKind.PlainCall : TaskKind.Task,
    status: hash['status'],
    createdAt: Number(hash['createdAt']),
    lastUpdatedAt: Number(hash['lastUpdatedAt']),
    ttl: Number(hash['ttl']),
    pollInterval: Number(hash['pollInterval']),
    owner: hash['owner'] ?? '',
    sessionId: hash['sessionId'] ?? '',
    tool: hash['tool'] ?? '',
  };
  if (hash['statusMessage']) record.statusMessage = hash['statusMessage'];
  if (hash['outcome']) record.outcome = JSON.parse(hash['outcome']) as Outcome;
  if (hash['progressToken']) record.progressToken = JSON.parse(hash['progressToken']) as string | number;
  if (hash['external']) record.external = JSON.parse(hash['external']) as ExternalRef;
  // A record past its ttl is treated as gone even if Redis has not evicted it yet (T-TTL-1).
  if (record.createdAt + record.ttl <= Date.now()) return undefined;
  return record;
}
