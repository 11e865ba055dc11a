// The sets a task belongs to besides its record: its owner's index and the all-tasks index (by creation, for
// listing), the live set (non-terminal tasks, for the reconciler), the expiries (for the janitor) and its owner's
// unfinished tasks (for MAX_TASKS_PER_OWNER). create-task-6.lua and transition-8.lua write them atomically with
// the record; this is the rest: reading them, and the one way a task is deleted from all of them.
import { WAIT_KINDS } from '@mcp-tasks/protocol';
import type { RedisClient } from '../redis.ts';
import { RedisScripts } from '../scripts.ts';
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

/** Tasks per claim script and per deleting MULTI: each holds Redis for a few milliseconds at most. */
const STEP = 1000;

/** What names a task's entries in the sets: its id, its owner and its index member. */
export type TaskEntries = Omit<ExpiryEntry, 'sessionId'>;

/** An expiry entry a sweeper claimed: the task it names, and the entry as stored (the deletion removes it). */
export interface ClaimedExpiry extends ExpiryEntry {
  entry: string;
}

export class TaskIndexes {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: TaskKeys,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

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
   * Claims up to `limit` expiry entries due at `now` for the caller until `leaseEnd` (claim-due-1.lua): several
   * sweepers share the due entries without taking one twice, and the entries of a sweeper that died before it
   * deleted their tasks are claimed again once the lease ends. deleteClaimed releases them.
   */
  async claimExpired(now: number, limit: number, leaseEnd: number): Promise<ClaimedExpiry[]> {
    const claimed: ClaimedExpiry[] = [];
    // In steps, so that no single script holds Redis for long.
    while (claimed.length < limit) {
      const step = Math.min(STEP, limit - claimed.length);
      const entries = await this.#scripts.claimDue({
        keys: { set: this.keys.expiries() },
        now,
        limit: step,
        leaseEnd,
      });
      for (const entry of entries) claimed.push({ ...decodeExpiryEntry(entry), entry });
      if (entries.length < step) break;
    }
    return claimed;
  }

  /** Whether each task is live (non-terminal), in one round trip; an expired record still counts by its last status. */
  async areLive(taskIds: readonly string[]): Promise<boolean[]> {
    if (taskIds.length === 0) return [];
    const scores = await this.redis.zmscore(this.keys.live(), ...taskIds);
    return scores.map((score) => score !== null);
  }

  /**
   * Deletes a task: its record and its entry in every set, at once (MULTI), with `expiryEntries`, its members of
   * the expiries set.
   */
  deleteTask(task: TaskEntries, expiryEntries: readonly string[] = []): Promise<void> {
    return this.deleteTasks([task], expiryEntries);
  }

  /**
   * Deletes tasks: their records and their entries in every set, with `expiryEntries` (the janitor's claims, or
   * the entries of a task deleted before its ttl), in one MULTI: a few commands plus two per owner, whatever the
   * number of tasks.
   */
  async deleteTasks(tasks: readonly TaskEntries[], expiryEntries: readonly string[] = []): Promise<void> {
    if (tasks.length === 0 && expiryEntries.length === 0) return;
    const multi = this.redis.multi();
    if (tasks.length > 0) {
      const ids = tasks.map((task) => task.taskId);
      // take-ended-13.lua deletes the same for a plain call its request answers: the two stay alike.
      multi
        // The input-request set and what the task's tool keeps durably (its hash, its children's set) expire with the
        // record; deleted here too for a task deleted before its ttl.
        .del(
          ...ids.flatMap((id) => [
            this.keys.record(id),
            this.keys.inputs(id),
            this.keys.durable(id),
            this.keys.children(id),
            this.keys.signals(id),
            // A webhook's outbox and attempts (same DEL: no command more for a task without one); its entry in the
            // set of deliveries due is dropped by the delivery loop that finds the outbox gone.
            this.keys.webhookOutbox(id),
            this.keys.webhookLog(id),
          ]),
        )
        .zrem(this.keys.live(), ...ids)
        .zrem(this.keys.allTasks(), ...tasks.map((task) => task.member));
      // A task parked when it expired (or was deleted) leaves the waiting sets with it (docs/durable-execution.md).
      for (const kind of WAIT_KINDS) multi.zrem(this.keys.waiting(kind), ...ids);
      const byOwner = new Map<string, TaskEntries[]>();
      for (const task of tasks) {
        const owned = byOwner.get(task.owner);
        if (owned) owned.push(task);
        else byOwner.set(task.owner, [task]);
      }
      for (const [owner, owned] of byOwner) {
        multi
          .zrem(this.keys.ownerIndex(owner), ...owned.map((task) => task.member))
          .zrem(this.keys.ownerLive(owner), ...owned.map((task) => task.taskId));
      }
    }
    if (expiryEntries.length > 0) multi.zrem(this.keys.expiries(), ...expiryEntries);
    const replies = await multi.exec();
    const failure = replies?.find(([error]) => error);
    if (failure?.[0]) throw failure[0];
  }

  /**
   * Deletes the tasks the janitor claimed and releases their claims: each step of a thousand tasks in one MULTI,
   * so that no transaction holds Redis for long.
   */
  async deleteClaimed(claimed: readonly ClaimedExpiry[]): Promise<void> {
    for (let at = 0; at < claimed.length; at += STEP) {
      const step = claimed.slice(at, at + STEP);
      await this.deleteTasks(
        step,
        step.map((task) => task.entry),
      );
    }
  }

  #key(index: TaskIndex): string {
    return index === 'all' ? this.keys.allTasks() : this.keys.ownerIndex(index.owner);
  }
}
