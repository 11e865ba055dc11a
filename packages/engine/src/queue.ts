// The BullMQ queue that carries tool calls: its name, job data contract and job options.
import { retryPolicyOf, toolQueueName, type Scheduling, type TaskRecord } from '@mcp-tasks/protocol';
import { Queue, type JobsOptions } from 'bullmq';
import { createRequire } from 'node:module';
import { ConfigError } from '@mcp-tasks/runtime';
import type { RedisClient } from './redis.ts';
import type { ScriptedJob } from './scripts.ts';
import type { TraceCarrier } from '@mcp-tasks/runtime';

/**
 * The queue all tools shared before the catalog (docs/catalog.md, "Queues"): no job is added to it any more; workers
 * still drain what an older api left in it.
 */
export const TOOL_QUEUE_NAME = 'tools';

/** The queue that holds a task's job: its external consumer's, or the tool's own queue. */
export function jobQueueOf(record: Pick<TaskRecord, 'tool' | 'external'>): string {
  const { external } = record;
  return external?.mode === 'queue' && external.queue !== undefined ? external.queue : toolQueueName(record.tool);
}

/** Job data: everything a worker (ours or an external consumer) needs to run the call. */
export interface ToolJobData {
  taskId: string;
  tool: string;
  arguments: unknown;
  /** The W3C trace context of the api request that created the task; present only while tracing is on. */
  trace?: TraceCarrier;
  /** The task's principal, for operators' counts of queued jobs per principal (absent in jobs of earlier versions). */
  owner?: string;
  /**
   * The task an upstream MCP server runs for this call (docs/gateway.md), written by the worker that created it: a
   * later attempt of the job follows that task instead of calling the tool again. Only our workers write it, and
   * only in jobs of our own tool queues.
   */
  upstreamTask?: UpstreamTaskRef;
}

/** Where an upstream's task for a job can be found again by another worker process. */
export interface UpstreamTaskRef {
  /** The upstream's name in the worker's configuration. */
  upstream: string;
  /** The upstream's task id. */
  taskId: string;
  /** The Streamable HTTP session that created the task: servers may keep their tasks per session. */
  sessionId?: string;
  /**
   * `job.attemptsMade` when the task was created: a run after a failed one (a retry) calls the tool afresh; only a
   * run after a crash or a hand-back (which leave this count alone) resumes.
   */
  attemptsMade: number;
}

export function createToolQueue(connection: RedisClient, prefix: string): Queue<ToolJobData> {
  const queue = new Queue<ToolJobData>(TOOL_QUEUE_NAME, { connection, prefix });
  // Its errors are those of the connection it shares, which its owner logs (RedisConnectionLog); unheard, BullMQ
  // printed each with its stack on stderr, several a second while Redis was down.
  queue.on('error', () => undefined);
  return queue;
}

/**
 * The backoff type of our tool queues' jobs: the worker's backoffStrategy computes each wait from the tool's retry
 * policy as the worker has it (docs/scheduling.md, "Retries").
 */
export const RETRY_BACKOFF_TYPE = 'mcpt-retry';

/** Attempts BullMQ grants a job whose processor fails for reasons outside the tool (Redis errors), as before. */
const INFRASTRUCTURE_ATTEMPTS = 3;

/**
 * Options of a job in one of our tool queues. The job id is the task id (a UUID: no ':' and never an integer string,
 * as BullMQ requires). Jobs are removed as soon as they finish: the task record keeps the outcome, so the queue holds
 * only work still to do. The fair priority between principals (FairQueue) is not among them: create-task-6.lua
 * computes it and adds it to the job it writes (scriptedJob). The worker decides whether an error the tool throws is
 * retried (its retry policy); BullMQ's attempts only have to allow it.
 */
export function toolJobOptions(
  taskId: string,
  retrySafe: boolean,
  scheduling?: Scheduling,
): JobsOptions & { jobId: string } {
  return {
    jobId: taskId,
    attempts: Math.max(retryPolicyOf(scheduling).attempts, retrySafe ? INFRASTRUCTURE_ATTEMPTS : 1),
    backoff: { type: RETRY_BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

/**
 * The BullMQ version whose job layout create-task-6.lua writes (job hash fields, prioritized score, marker, events),
 * checked key by key against `queue.add` by test/integration/job-layout.test.ts. A test fails as soon as another
 * version is installed, and the engine refuses to start with it (checkJobLayoutVersion): review the layout (BullMQ's
 * addPrioritizedJob and its includes) before changing this.
 */
export const BULLMQ_JOB_LAYOUT_VERSION = '6.7.0';

let installedVersion: string | undefined;

/**
 * The version of the BullMQ this module's `import 'bullmq'` loads, read once from its package.json, resolved from
 * this module: in the workspace (run from source) and in the runner's bundle alike, where bullmq stays a dependency
 * of the installed package.
 */
export function installedBullmqVersion(): string {
  installedVersion ??= (createRequire(import.meta.url)('bullmq/package.json') as { version: string }).version;
  return installedVersion;
}

/** The installed BullMQ is not the one whose job layout create-task-6.lua writes: the engine does not start. */
export class BullmqVersionError extends ConfigError {
  constructor(readonly installed: string) {
    super(
      `BullMQ ${installed} is installed, but this runner writes the jobs of its tool queues in the layout of BullMQ ` +
        `${BULLMQ_JOB_LAYOUT_VERSION} (create-task-6.lua), which another version may read wrongly or not at all. ` +
        `Install bullmq@${BULLMQ_JOB_LAYOUT_VERSION} (the version the runner's package.json pins; check overrides ` +
        `and resolutions that replace it), or upgrade mcp-task-runner to a version whose job layout test was ` +
        `checked against BullMQ ${installed}.`,
    );
  }
}

/** Refuses to go on with a BullMQ other than BULLMQ_JOB_LAYOUT_VERSION (createEngine, before anything starts). */
export function checkJobLayoutVersion(installed: string): void {
  if (installed !== BULLMQ_JOB_LAYOUT_VERSION) throw new BullmqVersionError(installed);
}

/** The options BullMQ 6.7.0 stores unchanged (no short key, no effect on which add script runs). */
const SCRIPTABLE_OPTIONS: ReadonlySet<string> = new Set([
  'jobId',
  'attempts',
  'backoff',
  'removeOnComplete',
  'removeOnFail',
]);

/**
 * The job `queue.add(name, data, opts)` would add with `opts.priority` set, for create-task-6.lua to add in the step
 * that writes its task: the queue's default options merged as `Queue.addJob` does, `attempts` defaulted to 0 and a
 * numeric backoff normalized as `Job`'s constructor does. Options BullMQ would store under another name or add with
 * another script (delay, lifo, parent, deduplication, telemetry, ...) are refused: such a job goes through
 * `queue.add`.
 */
export function scriptedJob(
  queue: Queue,
  name: string,
  data: unknown,
  opts: JobsOptions & { jobId: string },
  timestamp: number,
): ScriptedJob {
  // The checks Job.validateOptions makes of a custom id (a task id, a UUID, passes them).
  if (opts.jobId.includes(':') || `${parseInt(opts.jobId, 10)}` === opts.jobId) {
    throw new Error(`Job id '${opts.jobId}' must not contain ':' nor be an integer`);
  }
  // Always an object with jobId and attempts: the script appends the priority to it as one more member.
  const merged: Record<string, unknown> = { attempts: 0, ...queue.defaultJobOptions, ...opts, jobId: opts.jobId };
  const stored: Record<string, unknown> = {};
  for (const [option, value] of Object.entries(merged)) {
    if (value === undefined) continue;
    if (!SCRIPTABLE_OPTIONS.has(option)) {
      throw new Error(`Job option '${option}' cannot be written by create-task-6.lua: add such a job with queue.add`);
    }
    stored[option] = option === 'backoff' && typeof value === 'number' ? { type: 'fixed', delay: value } : value;
  }
  const keys = queue.keys as Record<string, string>;
  const key = (type: string): string => {
    const found = keys[type];
    if (found === undefined) throw new Error(`BullMQ queue '${queue.name}' has no '${type}' key`);
    return found;
  };
  return {
    keys: {
      job: queue.toKey(opts.jobId),
      marker: key('marker'),
      meta: key('meta'),
      active: key('active'),
      events: key('events'),
      priorityCounter: key('pc'),
    },
    name,
    data: JSON.stringify(data ?? {}),
    opts: JSON.stringify(stored),
    timestamp,
  };
}

/**
 * What the release of jobs held by gone workers (lost-jobs.ts) reads and writes of a BullMQ queue, in the layout of
 * BULLMQ_JOB_LAYOUT_VERSION (checked against real Workers by test/integration/lost-jobs.test.ts): the active list,
 * each job's lock (`<job key>:lock`, holding the token of the worker's attempt) and the fields of the job hash that
 * name its holder, its start count and its start, and the two keys of BullMQ's stalled-job check (the set of jobs the
 * next check examines, and the key that keeps a check from running again within its interval).
 */
export interface HeldJobKeys {
  active: string;
  stalled: string;
  stalledCheck: string;
  job(jobId: string): string;
  lock(jobId: string): string;
}

export function heldJobKeys(queue: Pick<Queue, 'keys' | 'toKey'>): HeldJobKeys {
  const keys = queue.keys as Record<string, string>;
  const key = (type: string): string => {
    const found = keys[type];
    if (found === undefined) throw new Error(`BullMQ queue has no '${type}' key`);
    return found;
  };
  return {
    active: key('active'),
    stalled: key('stalled'),
    stalledCheck: key('stalled-check'),
    job: (jobId) => queue.toKey(jobId),
    lock: (jobId) => `${queue.toKey(jobId)}:lock`,
  };
}

/**
 * The job hash fields BullMQ's moveToActive writes as a worker takes a job: the worker's `name` option (processedBy),
 * the job's start count (attemptsStarted) and the start (processedOn, epoch ms).
 */
export const HOLDER_FIELDS = ['pb', 'ats', 'processedOn'] as const;

/** How long an external consumer's finished job stays readable (contract v1): see externalJobOptions. */
export const EXTERNAL_JOB_RETENTION = { age: 24 * 60 * 60, count: 10_000 } as const;

/**
 * An external tool's job, in its own queue (ext-<tool>): the same options as ours, except that it is kept for a
 * while after it finishes. Its outcome reaches us as a queue event; should the event be missed or still be on its
 * way when the reconciler looks, the reconciler settles the task from the kept job instead of calling it lost.
 */
export function externalJobOptions(taskId: string, retrySafe: boolean): JobsOptions {
  return {
    ...toolJobOptions(taskId, retrySafe),
    // An external consumer computes its own waits: BullMQ's own strategy, as in contract v1.
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: EXTERNAL_JOB_RETENTION,
    removeOnFail: EXTERNAL_JOB_RETENTION,
  };
}
