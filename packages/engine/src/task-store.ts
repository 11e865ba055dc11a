// The task records in Redis: creation, reads, atomic status transitions and listing by owner.
import {
  isTaskStatus,
  isTerminal,
  sourcesOf,
  TaskKind,
  type Outcome,
  type Settlement,
  type TaskRecord,
  type TaskStatus,
} from '@mcp-tasks/protocol';
import type { KeySpace } from './keys.ts';
import { decodeCursor, encodeCursor, indexMember } from './list-cursor.ts';
import { withScripts, type RedisClient, type RunnerScripts } from './redis.ts';

export type TransitionResult =
  | { ok: true; status: TaskStatus; lastUpdatedAt: number }
  | { ok: false; reason: 'missing' }
  | { ok: false; reason: 'rejected'; current: TaskStatus };

export interface NewTask {
  record: TaskRecord;
  arguments: unknown;
  progressToken?: string | number;
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

export class TaskStore {
  readonly #redis: RedisClient & RunnerScripts;

  constructor(
    redis: RedisClient,
    readonly keys: KeySpace,
  ) {
    this.#redis = withScripts(redis);
  }

  /** Writes the record, its owner-index entry and its expiry in one transaction (invariant 2 starts here). */
  async create({ record, arguments: args, progressToken }: NewTask): Promise<void> {
    const expiresAt = record.createdAt + record.ttl;
    const member = indexMember(record.createdAt, record.taskId);
    const fields: Record<string, string> = {
      ...serialize(record),
      arguments: JSON.stringify(args ?? {}),
    };
    if (progressToken !== undefined) fields['progressToken'] = JSON.stringify(progressToken);
    const multi = this.#redis
      .multi()
      .hset(this.keys.task(record.taskId), fields)
      .pexpireat(this.keys.task(record.taskId), expiresAt)
      .zadd(this.keys.live(), record.lastUpdatedAt, record.taskId)
      .zadd(this.keys.expiries(), expiresAt, JSON.stringify([record.taskId, record.owner, member, record.kind]));
    if (record.kind === TaskKind.Task) {
      const index = this.keys.ownerIndex(record.owner);
      // The index lives as long as its longest-lived task; the janitor removes members as their tasks expire.
      multi.zadd(index, 0, member).pexpireat(index, expiresAt, 'GT').pexpireat(index, expiresAt, 'NX');
    }
    await exec(multi);
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const hash = await this.#redis.hgetall(this.keys.task(taskId));
    return deserialize(hash);
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

  /** Moves a task along the state machine; exactly one of racing transitions out of a status wins. */
  async transition(
    taskId: string,
    to: TaskStatus,
    change: { statusMessage?: string; outcome?: Outcome; from?: readonly TaskStatus[] } = {},
  ): Promise<TransitionResult> {
    const reply = await this.#redis.transitionTask(
      this.keys.task(taskId),
      this.keys.live(),
      to,
      `,${(change.from ?? sourcesOf(to)).join(',')},`,
      String(Date.now()),
      change.statusMessage ?? '',
      change.outcome ? JSON.stringify(change.outcome) : '',
      isTerminal(to) ? '1' : '0',
      this.keys.taskChannel(taskId),
      taskId,
    );
    const [verdict, a, b] = reply;
    if (verdict === 'ok') return { ok: true, status: a as TaskStatus, lastUpdatedAt: Number(b) };
    if (verdict === 'missing') return { ok: false, reason: 'missing' };
    return { ok: false, reason: 'rejected', current: a as TaskStatus };
  }

  settle(taskId: string, settlement: Settlement): Promise<TransitionResult> {
    return this.transition(taskId, settlement.status, settlement);
  }

  /** Changes the statusMessage of a task that is still `status`, without moving it (and moves lastUpdatedAt). */
  note(taskId: string, status: TaskStatus, statusMessage: string): Promise<TransitionResult> {
    return this.transition(taskId, status, { statusMessage, from: [status] });
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
  async delete(record: Pick<TaskRecord, 'taskId' | 'owner' | 'createdAt' | 'kind'>): Promise<void> {
    const member = indexMember(record.createdAt, record.taskId);
    await exec(
      this.#redis
        .multi()
        .del(this.keys.task(record.taskId))
        .zrem(this.keys.live(), record.taskId)
        .zrem(this.keys.expiries(), JSON.stringify([record.taskId, record.owner, member, record.kind]))
        .zrem(this.keys.ownerIndex(record.owner), member),
    );
  }
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
    tool: record.tool,
  };
  if (record.statusMessage) fields['statusMessage'] = record.statusMessage;
  if (record.outcome) fields['outcome'] = JSON.stringify(record.outcome);
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
    tool: hash['tool'] ?? '',
  };
  if (hash['statusMessage']) record.statusMessage = hash['statusMessage'];
  if (hash['outcome']) record.outcome = JSON.parse(hash['outcome']) as Outcome;
  // A record past its ttl is treated as gone even if Redis has not evicted it yet (T-TTL-1).
  if (record.createdAt + record.ttl <= Date.now()) return undefined;
  return record;
}
