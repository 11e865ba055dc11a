// The figures behind the dashboard's charts of the last hour (docs/observability.md): per minute, tasks created
// and finished by status, histograms of queue wait and run time, the queue depth, the same per tool, and the
// principals with the most tasks. Processes record where the event happens (the api a creation, the process whose
// transition won a finish, the worker a job start), without waiting for the writes: a lost figure is a dent in a
// chart, never a slower request. Everything is bounded: a minute's keys expire an hour after it, a minute's tool
// fields are bounded by the tool catalog, and its principals are trimmed to the top ACTIVITY_TOP_OWNERS.
import { TaskStatus } from '@mcp-tasks/protocol';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import type { TaskObserver } from './records/store.ts';

export const ACTIVITY_MINUTES = 60;
/** Principals kept per minute and measure (the busiest); a few more may exist between two trims. */
export const ACTIVITY_TOP_OWNERS = 50;
/** A process trims a minute's principals every this many of its writes (so the bound is top + this × processes). */
const TRIM_EVERY = 10;
/** A process renews a minute key's expiry every this many of its writes of the key. */
const EXPIRY_EVERY = 20;
/** Upper bounds (ms) of the latency histogram buckets; a percentile is read as its bucket's upper bound. */
export const LATENCY_BOUNDS_MS = [
  5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
] as const;
const TERMINAL = [TaskStatus.Completed, TaskStatus.Failed, TaskStatus.Cancelled] as const;
type Terminal = (typeof TERMINAL)[number];
const DEPTH_STATES = ['waiting', 'active', 'delayed'] as const;
const MINUTE_MS = 60_000;
const KEEP_MS = (ACTIVITY_MINUTES + 2) * MINUTE_MS;

export interface Percentiles {
  p50: (number | null)[];
  p95: (number | null)[];
  p99: (number | null)[];
}

export interface ToolActivity {
  tool: string;
  created: number;
  finished: Record<Terminal, number>;
  /** Run time percentiles over the hour (ms, bucket upper bounds); null without finished runs. */
  runP50Ms: number | null;
  runP95Ms: number | null;
}

export interface ActivityReport {
  /** Start of each minute (epoch ms), oldest first; the last is the current, unfinished minute. */
  minutes: number[];
  created: number[];
  finished: Record<Terminal, number[]>;
  queueWaitMs: Percentiles;
  runTimeMs: Percentiles;
  /** The last sample of each minute; null where no dashboard was open to take one. */
  depth: Record<(typeof DEPTH_STATES)[number], (number | null)[]>;
  tools: ToolActivity[];
  owners: { owner: string; created: number; finished: number }[];
}

export class ActivityRecorder {
  #writes = 0;
  #expiringMinute = -1;
  /** Writes of this minute's keys by this process (at most three keys: they are cleared when the minute turns). */
  readonly #expiring = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Feeds created and finished from the store's transitions. `runTimeOf` gives a finished task's run time, if known. */
  observer(runTimeOf: (taskId: string, at: number) => number | undefined = () => undefined): TaskObserver {
    return {
      created: (record) => this.created(record.tool, record.owner, record.createdAt),
      finished: (task, status, at) => {
        if ((TERMINAL as readonly TaskStatus[]).includes(status))
          this.finished(task.tool, task.owner, status as Terminal, at, runTimeOf(task.taskId, at));
      },
    };
  }

  created(tool: string, owner: string, at = Date.now()): void {
    const minute = minuteOf(at);
    const key = this.keys.activityMinute(minute);
    void this.#send([
      this.redis.hincrby(key, 'c', 1),
      this.redis.hincrby(key, `c|t|${tool}`, 1),
      ...this.#expire(key, minute),
      ...this.#owner(minute, 'created', owner),
    ]);
  }

  started(waitMs: number, at = Date.now()): void {
    const key = this.keys.activityMinute(minuteOf(at));
    void this.#send([this.redis.hincrby(key, `w|${latencyBucketOf(waitMs)}`, 1), ...this.#expire(key, minuteOf(at))]);
  }

  finished(tool: string, owner: string, status: Terminal, at = Date.now(), runMs?: number): void {
    const minute = minuteOf(at);
    const key = this.keys.activityMinute(minute);
    const writes = [
      this.redis.hincrby(key, `f|${status}`, 1),
      this.redis.hincrby(key, `f|${status}|t|${tool}`, 1),
      ...this.#expire(key, minute),
      ...this.#owner(minute, 'finished', owner),
    ];
    if (runMs !== undefined) {
      const bucket = latencyBucketOf(runMs);
      writes.push(this.redis.hincrby(key, `r|${bucket}`, 1), this.redis.hincrby(key, `r|t|${tool}|${bucket}`, 1));
    }
    void this.#send(writes);
  }

  /** A sample of the queue depth (jobs by state) for the current minute. */
  depth(jobs: Record<string, number>, at = Date.now()): Promise<void> {
    const minute = minuteOf(at);
    const key = this.keys.activityMinute(minute);
    const fields = DEPTH_STATES.flatMap((state) => [`d|${state}`, String(jobs[state] ?? 0)]);
    return this.#send([this.redis.hset(key, ...fields), ...this.#expire(key, minute)]);
  }

  /** The last hour, minute by minute: a fixed number of reads (ACTIVITY_MINUTES × 3), whatever the traffic. */
  async read(now = Date.now()): Promise<ActivityReport> {
    const last = minuteOf(now);
    const minutes = Array.from({ length: ACTIVITY_MINUTES }, (_, i) => last - ACTIVITY_MINUTES + 1 + i);
    const [hashes, created, finished] = await Promise.all([
      Promise.all(minutes.map((m) => this.redis.hgetall(this.keys.activityMinute(m)))),
      Promise.all(
        minutes.map((m) => this.redis.zrange(this.keys.activityOwners(m, 'created'), '0', '-1', 'WITHSCORES')),
      ),
      Promise.all(
        minutes.map((m) => this.redis.zrange(this.keys.activityOwners(m, 'finished'), '0', '-1', 'WITHSCORES')),
      ),
    ]);
    const num = (hash: Record<string, string>, field: string) => Number(hash[field] ?? 0);
    const histogram = (hash: Record<string, string>, prefix: string) =>
      LATENCY_BOUNDS_MS.map((_, i) => num(hash, `${prefix}|${i}`));
    const percentiles = (prefix: string): Percentiles => {
      const per = hashes.map((hash) => histogram(hash, prefix));
      return {
        p50: per.map((counts) => latencyPercentile(counts, 0.5)),
        p95: per.map((counts) => latencyPercentile(counts, 0.95)),
        p99: per.map((counts) => latencyPercentile(counts, 0.99)),
      };
    };
    const tools = new Map<string, ToolActivity & { run: number[] }>();
    const toolOf = (tool: string) => {
      const known = tools.get(tool);
      if (known) return known;
      const entry = {
        tool,
        created: 0,
        finished: { completed: 0, failed: 0, cancelled: 0 },
        runP50Ms: null,
        runP95Ms: null,
        run: LATENCY_BOUNDS_MS.map(() => 0),
      };
      tools.set(tool, entry);
      return entry;
    };
    for (const hash of hashes) {
      for (const [field, value] of Object.entries(hash)) {
        const parts = field.split('|');
        const count = Number(value);
        if (parts[0] === 'c' && parts[1] === 't') toolOf(parts.slice(2).join('|')).created += count;
        else if (parts[0] === 'f' && parts[2] === 't') {
          const status = parts[1] as Terminal;
          const entry = toolOf(parts.slice(3).join('|'));
          if (status in entry.finished) entry.finished[status] += count;
        } else if (parts[0] === 'r' && parts[1] === 't') {
          const bucket = Number(parts[parts.length - 1]);
          const entry = toolOf(parts.slice(2, -1).join('|'));
          entry.run[bucket] = (entry.run[bucket] ?? 0) + count;
        }
      }
    }
    const owners = new Map<string, { owner: string; created: number; finished: number }>();
    const addOwners = (lists: string[][], measure: 'created' | 'finished') => {
      for (const list of lists) {
        for (let i = 0; i + 1 < list.length; i += 2) {
          const owner = String(list[i]);
          const entry = owners.get(owner) ?? { owner, created: 0, finished: 0 };
          entry[measure] += Number(list[i + 1]);
          owners.set(owner, entry);
        }
      }
    };
    addOwners(created, 'created');
    addOwners(finished, 'finished');
    return {
      minutes: minutes.map((m) => m * MINUTE_MS),
      created: hashes.map((hash) => num(hash, 'c')),
      finished: {
        completed: hashes.map((hash) => num(hash, 'f|completed')),
        failed: hashes.map((hash) => num(hash, 'f|failed')),
        cancelled: hashes.map((hash) => num(hash, 'f|cancelled')),
      },
      queueWaitMs: percentiles('w'),
      runTimeMs: percentiles('r'),
      depth: {
        waiting: hashes.map((hash) => (hash['d|waiting'] === undefined ? null : Number(hash['d|waiting']))),
        active: hashes.map((hash) => (hash['d|active'] === undefined ? null : Number(hash['d|active']))),
        delayed: hashes.map((hash) => (hash['d|delayed'] === undefined ? null : Number(hash['d|delayed']))),
      },
      tools: [...tools.values()]
        .map(({ run, ...entry }) => ({
          ...entry,
          runP50Ms: latencyPercentile(run, 0.5),
          runP95Ms: latencyPercentile(run, 0.95),
        }))
        .sort((a, b) => b.created - a.created || a.tool.localeCompare(b.tool)),
      owners: [...owners.values()]
        .sort((a, b) => b.created - a.created || b.finished - a.finished)
        .slice(0, ACTIVITY_TOP_OWNERS),
    };
  }

  #owner(minute: number, measure: 'created' | 'finished', owner: string): Promise<unknown>[] {
    const key = this.keys.activityOwners(minute, measure);
    const writes: Promise<unknown>[] = [this.redis.zincrby(key, 1, owner), ...this.#expire(key, minute)];
    this.#writes += 1;
    if (this.#writes % TRIM_EVERY === 0) writes.push(this.redis.zremrangebyrank(key, 0, -(ACTIVITY_TOP_OWNERS + 1)));
    return writes;
  }

  /** Callers on the hot path drop the promise: it never rejects (errors go to onError). */
  /**
   * The expiry of a minute's key: set by a process's first write of the key and every EXPIRY_EVERY-th after, not by
   * every write (one command saved per event). The repeats cover a key re-created without expiry after Redis lost
   * its data while this process kept its count.
   */
  #expire(key: string, minute: number): Promise<unknown>[] {
    if (minute !== this.#expiringMinute) {
      this.#expiringMinute = minute;
      this.#expiring.clear();
    }
    const writes = this.#expiring.get(key) ?? 0;
    this.#expiring.set(key, writes + 1);
    return writes % EXPIRY_EVERY === 0 ? [this.redis.pexpireat(key, minute * MINUTE_MS + KEEP_MS)] : [];
  }

  #send(writes: Promise<unknown>[]): Promise<void> {
    return Promise.all(writes).then(() => undefined, this.onError);
  }
}

function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS);
}

export function latencyBucketOf(ms: number): number {
  const index = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return index === -1 ? LATENCY_BOUNDS_MS.length - 1 : index;
}

/** The upper bound of the bucket holding the q-quantile, or null without samples. */
export function latencyPercentile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < counts.length; i += 1) {
    seen += counts[i] ?? 0;
    if (seen >= rank) return LATENCY_BOUNDS_MS[i] ?? null;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1] ?? null;
}
