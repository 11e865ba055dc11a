// Jobs held by worker processes that are gone (docs/reliability.md, "A worker dies"). A process that dies (kill -9,
// out of memory) leaves its Redis connections closed at once, while its jobs' locks last their term
// (WORKER_LOCK_DURATION_MS) and BullMQ's stalled-job check comes only every WORKER_STALLED_INTERVAL_MS. So each
// worker names its connections after its instance, BullMQ records that instance as the holder of every job it takes
// (the Worker's `name` option, the job's `processedBy`), and the workers of a queue look every few seconds
// (WORKER_LIVENESS_CHECK_MS) for active jobs whose holder has no connection left: such a job, found so twice with the
// same lock, is released to BullMQ's own stalled-job check (release-lost-3.lua). A machine that vanishes leaves its
// connections open on the server until TCP gives up: its jobs still wait for their lock's term. A busy worker keeps
// its connections: it never loses a job this way.
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { KeySpace } from './keys.ts';
import { heldJobKeys, HOLDER_FIELDS } from './bullmq/index.ts';
import type { RedisClient } from './redis.ts';
import { RedisScripts } from './scripts.ts';

/**
 * Separates a worker's name from the random part that makes its instance unique: the name alone repeats when a
 * container restarts (same hostname, same pid), and the jobs of the process that died must not pass for the new one's.
 */
export const INSTANCE_MARK = '#';

/** The worker's instance: its name, made a valid connection name, and a random part (INSTANCE_MARK). */
export function workerInstance(name: string): string {
  // CLIENT SETNAME takes printable ASCII without spaces only.
  return `${name.replace(/[^!-~]/g, '_')}${INSTANCE_MARK}${randomBytes(4).toString('hex')}`;
}

/** The worker's name in an instance (as "Running on <worker>." says it); any other holder name as it is. */
export function workerOf(instance: string): string {
  const mark = instance.lastIndexOf(INSTANCE_MARK);
  return mark === -1 ? instance : instance.slice(0, mark);
}

/** The names of a worker's three connections (worker-engine.ts): the role, then the instance. */
export type WorkerConnectionRole = 'mcpt-worker' | 'mcpt-worker-bull' | 'mcpt-worker-sub';

export function workerConnectionName(role: WorkerConnectionRole, instance: string): string {
  return `${role}:${instance}`;
}

const WORKER_CONNECTION = /^mcpt-worker(?:-bull|-sub)?:(.+)$/;

/** One connection of CLIENT LIST: its name and how long it has been open (seconds). */
export interface ClientEntry {
  name: string;
  age: number;
}

/** The named connections of a CLIENT LIST reply (one `key=value ...` line per connection). */
export function parseClientList(text: string): ClientEntry[] {
  const entries: ClientEntry[] = [];
  for (const line of text.split('\n')) {
    const name = /(?:^| )name=(\S+)/.exec(line)?.[1];
    if (name === undefined) continue;
    entries.push({ name, age: Number(/(?:^| )age=(\d+)/.exec(line)?.[1] ?? 0) });
  }
  return entries;
}

/**
 * The worker instances with a connection open, each with the age (seconds) of its oldest one: on every master of a
 * cluster (a worker's connections go to the nodes it sends commands to), or on the one server.
 */
export async function connectedInstances(redis: RedisClient): Promise<Map<string, number>> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const lists = await Promise.all(nodes.map((node) => node.call('CLIENT', 'LIST', 'TYPE', 'normal')));
  const instances = new Map<string, number>();
  for (const list of lists) {
    for (const { name, age } of parseClientList(String(list))) {
      const instance = WORKER_CONNECTION.exec(name)?.[1];
      if (instance !== undefined) instances.set(instance, Math.max(age, instances.get(instance) ?? 0));
    }
  }
  return instances;
}

/** Whether a CLIENT command failed because the server (a proxy, a managed Redis, an ACL) does not allow it. */
export function isClientCommandRefused(error: unknown): boolean {
  return /unknown command|unknown subcommand|NOPERM|not allowed|no permissions/i.test(String(error));
}

/** A job released because its holder is gone: its id (the task id), its holder and the attempt it was on. */
export interface LostJob {
  jobId: string;
  /** The holder's instance (workerOf gives its name). */
  holder: string;
  /** The job's start count when it was lost (BullMQ's attemptsStarted): the attempt that was lost. */
  attempt: number;
  /** When that attempt started, epoch ms (BullMQ's processedOn), if known. */
  startedAt?: number;
}

export interface LostJobsLook {
  /** Released now: BullMQ's stalled-job check moves them back to wait when run (ToolQueueWorker.checkStalledNow). */
  released: LostJob[];
  /** Jobs whose holder is gone, filed to be released by the next look if it still is. */
  suspects: number;
}

const NOTHING: LostJobsLook = { released: [], suspects: 0 };

/** The lease is a little shorter than the gap between looks, so that the look a gap later finds it gone. */
const LEASE_MARGIN_MS = 100;

export class LostJobs {
  readonly #redis: RedisClient;
  readonly #scripts: RedisScripts;
  /** The shortest time between two looks at a queue, and between the look that files a suspect and its release. */
  readonly gapMs: number;

  constructor(
    redis: RedisClient,
    private readonly keys: KeySpace,
    /** This worker's instance (workerInstance): its own jobs are never suspects. */
    private readonly instance: string,
    /** WORKER_LIVENESS_CHECK_MS: how often each worker looks at each of its queues. */
    private readonly intervalMs: number,
  ) {
    this.#redis = redis;
    this.#scripts = RedisScripts.on(redis);
    this.gapMs = Math.max(200, Math.floor(intervalMs / 2));
  }

  /**
   * One look at the active jobs of `queue` (a BullMQ Queue or Worker of the tool queue `queueName`), unless another
   * worker looked less than a gap ago. Cost: one command when another worker has looked; otherwise two round trips
   * (the active list, then each active job's lock and holder), and, only when some job's holder is another worker,
   * a CLIENT LIST per master and the release script.
   */
  async look(queueName: string, queue: Parameters<typeof heldJobKeys>[0], now = Date.now()): Promise<LostJobsLook> {
    const lease = this.keys.lostJobsLease(queueName);
    if ((await this.#redis.set(lease, this.instance, 'PX', this.gapMs - LEASE_MARGIN_MS, 'NX')) !== 'OK') {
      return NOTHING;
    }
    const held = heldJobKeys(queue);
    const suspectsKey = this.keys.lostJobsSuspects(queueName);
    const [[, active], [, filed]] = ((await this.#redis
      .pipeline()
      .lrange(held.active, 0, -1)
      .hlen(suspectsKey)
      .exec()) ?? []) as [[unknown, string[]], [unknown, number]];
    const candidates = await this.#foreignHolders(held, active);
    if (candidates.length === 0 && filed === 0) return NOTHING;
    const connected = await this.#connected();
    if (!connected) return NOTHING;
    const gone = candidates.filter((job) => !connected.has(job.holder));
    if (gone.length === 0 && filed === 0) return NOTHING;
    const released = new Set(
      await this.#scripts.releaseLost({
        keys: { suspects: suspectsKey, stalled: held.stalled, stalledCheck: held.stalledCheck },
        now,
        // A little slack: a look scheduled a gap after the one that filed the suspect may run a few ms early.
        confirmAfter: now - this.gapMs + 250,
        keepMs: this.intervalMs * 4,
        jobs: gone.map((job) => ({ id: job.jobId, token: job.token, lockKey: held.lock(job.jobId) })),
      }),
    );
    return {
      released: gone.filter((job) => released.has(job.jobId)).map(({ token: _token, ...job }) => job),
      suspects: gone.length - released.size,
    };
  }

  /** The active jobs locked by another worker instance (one whose connections can be looked for), with their lock. */
  async #foreignHolders(
    held: ReturnType<typeof heldJobKeys>,
    active: readonly string[],
  ): Promise<(LostJob & { token: string })[]> {
    if (active.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const jobId of active) pipeline.get(held.lock(jobId)).hmget(held.job(jobId), ...HOLDER_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    const found: (LostJob & { token: string })[] = [];
    active.forEach((jobId, i) => {
      const token = replies[2 * i]?.[1] as string | null | undefined;
      const [holder, attempts, processedOn] = (replies[2 * i + 1]?.[1] ?? []) as (string | null)[];
      // A holder without the mark is a worker of an earlier version, or one whose connections it could not see:
      // its jobs wait for their lock's term.
      if (!token || !holder?.includes(INSTANCE_MARK) || holder === this.instance) return;
      found.push({
        jobId,
        token,
        holder,
        attempt: Number(attempts ?? 0),
        ...(processedOn ? { startedAt: Number(processedOn) } : {}),
      });
    });
    return found;
  }

  /**
   * The connected instances, when this look can trust the list: it must show this worker's own connections, open for
   * at least an interval (just after a Redis restart, other workers may still be reconnecting).
   */
  async #connected(): Promise<Map<string, number> | undefined> {
    const connected = await connectedInstances(this.#redis);
    const own = connected.get(this.instance);
    return own !== undefined && own * 1000 >= this.intervalMs ? connected : undefined;
  }
}
