// What the engine knows of BullMQ's own layout, at one version (docs/bullmq-upgrade.md): the version guard, the jobs
// create-task-6.lua adds itself (lua/include/bullmq-job.lua) as `queue.add` would (prioritized and standard), and
// the keys and fields of a job held by a worker that the release of a gone worker's jobs reads (lost-jobs.ts,
// release-lost-3.lua).
import { type JobsOptions, type Queue } from 'bullmq';
import { createRequire } from 'node:module';
import { ConfigError } from '@mcp-tasks/runtime';
import type { ScriptedJob } from '../scripts.ts';

/**
 * The BullMQ version whose job layout lua/include/bullmq-job.lua writes for create-task-6.lua (job hash fields,
 * prioritized score, wait list, marker, events), checked key by key against `queue.add` by
 * test/integration/job-layout.test.ts. A test fails as soon as another version is installed, and the engine refuses
 * to start with it (checkJobLayoutVersion): review the layout (BullMQ's addPrioritizedJob and addStandardJob and
 * their includes) before changing this.
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
      `BullMQ ${installed} is installed, but this runner writes the jobs of its queues (its tools' and external ` +
        `consumers') in the layout of BullMQ ${BULLMQ_JOB_LAYOUT_VERSION} (create-task-6.lua), which another ` +
        `version may read wrongly or not at all. ` +
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
 * The job `queue.add(name, data, opts)` would add, for create-task-6.lua to add in the step that writes its task:
 * `prioritized`, as with `opts.priority` set (the script computes the priority and appends it), or `standard`, as
 * without a priority (onto the wait list, in arrival order). The queue's default options are merged as
 * `Queue.addJob` does, `attempts` defaulted to 0 and a numeric backoff normalized as `Job`'s constructor does.
 * Options BullMQ would store under another name or add with another script (delay, lifo, parent, deduplication,
 * telemetry, ...) are refused: none of our jobs has them.
 */
export function scriptedJob(
  kind: ScriptedJob['kind'],
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
  // Always an object with jobId and attempts: the script appends a prioritized job's priority to it as one more
  // member.
  const merged: Record<string, unknown> = { attempts: 0, ...queue.defaultJobOptions, ...opts, jobId: opts.jobId };
  const stored: Record<string, unknown> = {};
  for (const [option, value] of Object.entries(merged)) {
    if (value === undefined) continue;
    if (!SCRIPTABLE_OPTIONS.has(option)) {
      throw new Error(`Job option '${option}' cannot be written by create-task-6.lua`);
    }
    stored[option] = option === 'backoff' && typeof value === 'number' ? { type: 'fixed', delay: value } : value;
  }
  const keys = queue.keys as Record<string, string>;
  const key = (type: string): string => {
    const found = keys[type];
    if (found === undefined) throw new Error(`BullMQ queue '${queue.name}' has no '${type}' key`);
    return found;
  };
  const common = {
    job: queue.toKey(opts.jobId),
    marker: key('marker'),
    meta: key('meta'),
    active: key('active'),
    events: key('events'),
  };
  const fields = { name, data: JSON.stringify(data ?? {}), opts: JSON.stringify(stored), timestamp };
  return kind === 'prioritized'
    ? { kind, keys: { ...common, priorityCounter: key('pc') }, ...fields }
    : { kind, keys: { ...common, wait: key('wait') }, ...fields };
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
