// The figures behind the dashboard's charts of the last hour (docs/observability.md): per minute, tasks created
// and finished by status, histograms of queue wait and run time, the queue depth, the same per tool, and the
// principals with the most tasks. Processes record where the event happens (the api a creation, the process whose
// transition won a finish, the worker a job start) into counts held in memory, which one pipeline adds to Redis at
// most every flush interval, when a minute ends and at close: under load the figures cost no Redis command per task,
// and a lost figure is a dent in a chart, never a slower request. Everything is bounded: a minute's keys expire an
// hour after it, a minute's tool fields are bounded by the tool catalog, its principals are trimmed to the top
// ACTIVITY_TOP_OWNERS at each flush, and what waits for a flush is bounded (ACTIVITY_PENDING_OWNERS, below).
import { TaskStatus } from '@mcp-tasks/protocol';
import { ACTIVITY_FLUSH_MS } from '../config.ts';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';
import { ownerLabel } from '@mcp-tasks/runtime';
import type { TaskObserver } from '../records/store.ts';
import type { QueueDepth } from './task-admin.ts';

export const ACTIVITY_MINUTES = 60;
/** Principals kept per minute and measure (the busiest); each flush trims them to this many. */
export const ACTIVITY_TOP_OWNERS = 50;
/**
 * Principals a process holds per minute and measure until its next flush. Reaching it sends a flush at once; while
 * a flush is still on its way (a slow or absent Redis) the busiest half is kept and the rest dropped, so that a
 * process never holds more than (minutes pending) × (fields of a minute + 2 × this) counts.
 */
const PENDING_OWNERS = 1000;
/** A process renews a minute key's expiry on its first write of the key and every this many writes after. */
const EXPIRY_EVERY = 10;
/** How long close() waits for its last flush: a Redis that does not answer must not hold a shutdown. */
const CLOSE_WAIT_MS = 2000;
/**
 * Upper bounds (ms) of the latency histogram buckets; a percentile is read as its bucket's upper bound. They reach a
 * week, past the longest task ttl allowed by default (TASK_TTL_MAX_MS, a day), so that a long tool's runs and waits
 * show where they are instead of piling up at the last bound; a longer one counts in the last bucket. Stored fields
 * name buckets by index: new bounds go after the old ones, so that figures written before an upgrade keep their
 * meaning.
 */
export const LATENCY_BOUNDS_MS = [
  5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
  // hours and days (2 h, 4 h, 8 h, 12 h, 1 d, 2 d, 7 d)
  7_200_000, 14_400_000, 28_800_000, 43_200_000, 86_400_000, 172_800_000, 604_800_000,
] as const;
const TERMINAL = [TaskStatus.Completed, TaskStatus.Failed, TaskStatus.Cancelled] as const;
type Terminal = (typeof TERMINAL)[number];
const DEPTH_STATES = ['waiting', 'active', 'delayed', 'held'] as const;
const MINUTE_MS = 60_000;
const KEEP_MS = (ACTIVITY_MINUTES + 2) * MINUTE_MS;
const MEASURES = ['created', 'finished'] as const;
type Measure = (typeof MEASURES)[number];

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
  /** The last sample of each minute (QueueDepth); null where no dashboard was open to take one. */
  depth: Record<(typeof DEPTH_STATES)[number], (number | null)[]>;
  tools: ToolActivity[];
  /** The busiest owners, as operators see them (ownerLabel). */
  owners: { owner: string; created: number; finished: number }[];
}

/** What a process has counted of one minute and not sent yet. */
interface PendingMinute {
  /** Increments of the minute's hash, by field. */
  fields: Map<string, number>;
  /** Increments of the minute's principals, by measure and principal. */
  owners: Record<Measure, Map<string, number>>;
}

export interface ActivityOptions {
  /** How often, at most, pending figures are sent (ms); default ACTIVITY_FLUSH_MS. */
  flushMs?: number;
  /** Called with the error of a flush or a sample that failed (the figures are dropped). */
  onError?: (error: unknown) => void;
}

export class ActivityRecorder {
  readonly #flushMs: number;
  readonly #onError: (error: unknown) => void;
  /** Counts not sent yet, by minute. */
  #pending = new Map<number, PendingMinute>();
  #timer: NodeJS.Timeout | undefined;
  /** The flush on its way to Redis; there is at most one. */
  #flushing: Promise<void> | undefined;
  #closed = false;
  /** This process's writes of each recent minute key (#expire): three keys a minute, of the last two minutes written. */
  readonly #expiring = new Map<string, { minute: number; writes: number }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    options: ActivityOptions = {},
  ) {
    this.#flushMs = options.flushMs ?? ACTIVITY_FLUSH_MS;
    this.#onError = options.onError ?? (() => undefined);
  }

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
    this.#count(at, ['c', `c|t|${tool}`], 'created', owner);
  }

  started(waitMs: number, at = Date.now()): void {
    this.#count(at, [`w|${latencyBucketOf(waitMs)}`]);
  }

  finished(tool: string, owner: string, status: Terminal, at = Date.now(), runMs?: number): void {
    const fields = [`f|${status}`, `f|${status}|t|${tool}`];
    if (runMs !== undefined) {
      const bucket = latencyBucketOf(runMs);
      fields.push(`r|${bucket}`, `r|t|${tool}|${bucket}`);
    }
    this.#count(at, fields, 'finished', owner);
  }

  /** A sample of the queue depth (TaskAdmin.queueJobs) for the current minute, written at once (it is not per task). */
  depth(jobs: QueueDepth, at = Date.now()): Promise<void> {
    const minute = minuteOf(at);
    const key = this.keys.activityMinute(minute);
    const fields = DEPTH_STATES.flatMap((state) => [`d|${state}`, String(jobs[state])]);
    return Promise.all([this.redis.hset(key, ...fields), this.redis.pexpireat(key, expiryOf(minute))]).then(
      () => undefined,
      this.#onError,
    );
  }

  /**
   * Sends what this process has counted, as one pipeline, and resolves when Redis has answered (never rejects: an
   * error goes to onError and those counts are lost). A flush already on its way is waited for first.
   */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    this.#clearTimer();
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    const flushing = this.#write(batch).finally(() => {
      this.#flushing = undefined;
      if (this.#pending.size > 0) this.#schedule();
    });
    this.#flushing = flushing;
    await flushing;
  }

  /**
   * Sends what is pending and stops the timer (engine close, before the connection closes); waits at most
   * CLOSE_WAIT_MS. A figure counted after close is sent at once, on its own.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#clearTimer();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
    try {
      await Promise.race([this.flush(), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The last hour, minute by minute: a fixed number of reads (ACTIVITY_MINUTES × 3), whatever the traffic. This
   * process's pending figures are sent first; other processes' arrive within their flush interval.
   */
  async read(now = Date.now()): Promise<ActivityReport> {
    await this.flush();
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
          // The minute's sets keep the owner; operators see its label (a session id is a credential).
          const owner = ownerLabel(String(list[i]));
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
      depth: Object.fromEntries(
        DEPTH_STATES.map((state) => [
          state,
          hashes.map((hash) => (hash[`d|${state}`] === undefined ? null : Number(hash[`d|${state}`]))),
        ]),
      ) as ActivityReport['depth'],
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

  #count(at: number, fields: readonly string[], measure?: Measure, owner?: string): void {
    const minute = minuteOf(at);
    let pending = this.#pending.get(minute);
    if (!pending) {
      pending = { fields: new Map(), owners: { created: new Map(), finished: new Map() } };
      this.#pending.set(minute, pending);
      this.#dropStaleMinutes(minute);
    }
    for (const field of fields) pending.fields.set(field, (pending.fields.get(field) ?? 0) + 1);
    let full = false;
    if (measure !== undefined && owner !== undefined) {
      const owners = pending.owners[measure];
      owners.set(owner, (owners.get(owner) ?? 0) + 1);
      full = owners.size >= PENDING_OWNERS;
      if (full && this.#flushing) pending.owners[measure] = busiest(owners, PENDING_OWNERS / 2);
    }
    if (this.#closed || (full && !this.#flushing)) void this.flush();
    else this.#schedule();
  }

  /**
   * The next flush: a flush interval from now, or when the minute ends if that is sooner (so that a finished
   * minute is complete in Redis at once). None while a flush is on its way: its end schedules the next.
   */
  #schedule(): void {
    if (this.#timer || this.#flushing || this.#closed) return;
    const now = Date.now();
    const minuteEnd = (minuteOf(now) + 1) * MINUTE_MS;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.flush();
      },
      Math.max(0, Math.min(this.#flushMs, minuteEnd - now)),
    );
    this.#timer.unref();
  }

  #clearTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Whether this flush sets the key's expiry: a process's first write of a minute key does, and every EXPIRY_EVERY-th
   * after (a key re-created without expiry after Redis lost its data while this process kept writing gets it back).
   */
  #expire(key: string, minute: number): boolean {
    for (const [known, entry] of this.#expiring) if (entry.minute < minute - 1) this.#expiring.delete(known);
    const entry = this.#expiring.get(key) ?? { minute, writes: 0 };
    entry.writes += 1;
    this.#expiring.set(key, entry);
    return entry.writes % EXPIRY_EVERY === 1;
  }

  /** Minutes older than the hour shown (a flush stuck for that long) are dropped: their keys would be gone anyway. */
  #dropStaleMinutes(newest: number): void {
    for (const minute of this.#pending.keys()) {
      if (minute < newest - ACTIVITY_MINUTES - 2) this.#pending.delete(minute);
    }
  }

  /** One pipeline: each minute's increments, its principals trimmed to the top, the keys' expiries (#expire). */
  async #write(batch: Map<number, PendingMinute>): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const [minute, pending] of batch) {
      if (pending.fields.size > 0) {
        const key = this.keys.activityMinute(minute);
        for (const [field, count] of pending.fields) pipeline.hincrby(key, field, count);
        if (this.#expire(key, minute)) pipeline.pexpireat(key, expiryOf(minute));
      }
      for (const measure of MEASURES) {
        const owners = pending.owners[measure];
        if (owners.size === 0) continue;
        const key = this.keys.activityOwners(minute, measure);
        for (const [owner, count] of owners) pipeline.zincrby(key, count, owner);
        pipeline.zremrangebyrank(key, 0, -(ACTIVITY_TOP_OWNERS + 1));
        if (this.#expire(key, minute)) pipeline.pexpireat(key, expiryOf(minute));
      }
    }
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([error]) => error);
      if (failed) this.#onError(failed[0]);
    } catch (error) {
      this.#onError(error);
    }
  }
}

function expiryOf(minute: number): number {
  return minute * MINUTE_MS + KEEP_MS;
}

/** The `keep` principals with the highest counts. */
function busiest(owners: Map<string, number>, keep: number): Map<string, number> {
  return new Map([...owners].sort((a, b) => b[1] - a[1]).slice(0, keep));
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
