// The sets a task belongs to besides its record: its owner's index and the all-tasks index (by creation, for
// listing), the live set (non-terminal tasks, for the reconciler), the expiries (for the janitor) and its owner's
// unfinished tasks (for MAX_TASKS_PER_OWNER). create-task-6.lua and transition-6.lua write them atomically with
// the record; this is the rest: reading them, and the one way a task is deleted from all of them.
import type { RedisClient } from '../redis.ts';
import { decodeExpiryEntry, type ExpiryEntry } from './codec.ts';
import type { TaskKeys } from './keys.ts';

/** An index ordered by creation: one owner's tasks (tasks/list), or every task of every kind (operators). */
export type TaskIndex = { owner: string } | 'all';

/** A lexical range of index members: `+`/`-` for the ends, `(member` exclusive, `[member` inclusive. */
export interface MemberRange {
  from: string;
  to: string;
  count: number;
  /** Newest first (from `from` down to `to`). */
  reverse: boolean;
}

export class TaskIndexes {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: TaskKeys,
  ) {}

  /** Members of an index in a lexical range: O(log N + count) whatever the size of the index. */
  async members(index: TaskIndex, range: MemberRange): Promise<string[]> {
    const { from, to, count, reverse } = range;
    const args = [this.#key(index), from, to, 'BYLEX', ...(reverse ? ['REV'] : []), 'LIMIT', '0', String(count)];
    return (await this.redis.call('ZRANGE', ...args)) as string[];
  }

  /** Drops members whose records are gone (expired between janitor runs). */
  async forget(index: TaskIndex, members: readonly string[]): Promise<void> {
    if (members.length > 0) await this.redis.zrem(this.#key(index), ...members);
  }

  /** How many tasks are live (non-terminal). */
  liveCount(): Promise<number> {
    return this.redis.zcard(this.keys.live());
  }

  /** The ids of at most `limit` live tasks, least recently changed first. */
  async live(limit: number): Promise<string[]> {
    return limit > 0 ? this.redis.zrange(this.keys.live(), '0', String(limit - 1)) : [];
  }

  /** The ids of at most `limit` live tasks unchanged (and unchecked) since `before`, epoch ms. */
  liveSince(before: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.live(), '-inf', before, 'LIMIT', 0, limit);
  }

  /** Marks a live task as checked at `now`, so that it is looked at again only later. */
  async checked(taskId: string, now: number): Promise<void> {
    await this.redis.zadd(this.keys.live(), 'XX', now, taskId);
  }

  /** Removes tasks from the live set (their records are gone). */
  async leaveLive(...taskIds: string[]): Promise<void> {
    if (taskIds.length > 0) await this.redis.zrem(this.keys.live(), ...taskIds);
  }

  /**
   * Claims up to `limit` tasks past their expiry at `now`, one at a time as the caller takes them: each entry
   * belongs to the one process whose ZREM removed it, so several janitors can run at once.
   */
  async *claimExpired(now: number, limit: number): AsyncGenerator<ExpiryEntry> {
    const entries = await this.redis.zrangebyscore(this.keys.expiries(), '-inf', now, 'LIMIT', 0, limit);
    for (const entry of entries) {
      if ((await this.redis.zrem(this.keys.expiries(), entry)) === 1) yield decodeExpiryEntry(entry);
    }
  }

  /**
   * Deletes a task: its record and its entry in every set, at once (MULTI). `expiryEntries` are the expiries
   * members to remove (none when the janitor claimed it already).
   */
  async deleteTask(task: Omit<ExpiryEntry, 'sessionId'>, expiryEntries: readonly string[] = []): Promise<void> {
    const multi = this.redis
      .multi()
      .del(this.keys.record(task.taskId))
      .zrem(this.keys.live(), task.taskId)
      .zrem(this.keys.ownerIndex(task.owner), task.member)
      .zrem(this.keys.allTasks(), task.member)
      .zrem(this.keys.ownerLive(task.owner), task.taskId);
    if (expiryEntries.length > 0) multi.zrem(this.keys.expiries(), ...expiryEntries);
    const replies = await multi.exec();
    const failure = replies?.find(([error]) => error);
    if (failure?.[0]) throw failure[0];
  }

  #key(index: TaskIndex): string {
    return index === 'all' ? this.keys.allTasks() : this.keys.ownerIndex(index.owner);
  }
}
