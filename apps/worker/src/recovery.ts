// The tasks of a worker process that died continue on another within seconds (docs/reliability.md, "A worker dies"):
// every WORKER_LIVENESS_CHECK_MS this worker looks at the active jobs of each queue it takes jobs from for jobs whose
// holder has no Redis connection left (LostJobs in the engine). A job found so twice is released to BullMQ's stalled-job
// check, run here at once, and its task says which attempt was lost with which worker until a worker starts it again.
import {
  AttemptEnding,
  connectedInstances,
  isClientCommandRefused,
  lostAttemptMessage,
  LostJobs,
  workerOf,
  type KeySpace,
  type LostJob,
  type RedisClient,
  type TaskStore,
} from '@mcp-tasks/engine';
import { type CleanupStack, type Logger } from '@mcp-tasks/runtime';
import { isTerminal } from '@mcp-tasks/protocol';
import type { QueueWorkers } from './queue-workers.ts';

/**
 * Whether other workers can tell this one's death by its connections: its own named connection must show in CLIENT
 * LIST. Through a proxy that hides them, or with CLIENT refused, the jobs it takes keep the plain worker name, so no
 * worker ever releases them early (they wait for their lock's term), and it looks for no one else's.
 */
export async function connectionsVisible(redis: RedisClient, instance: string, log: Logger): Promise<boolean> {
  try {
    if ((await connectedInstances(redis)).has(instance)) return true;
    log.warn(
      "recovery in seconds is off: this worker's Redis connections do not show in CLIENT LIST (a proxy?); if it " +
        'dies, its tasks continue elsewhere once their job locks expire (WORKER_LOCK_DURATION_MS)',
    );
  } catch (error) {
    if (!isClientCommandRefused(error)) throw error;
    log.warn(
      'recovery in seconds is off: Redis refuses CLIENT LIST to this worker; if it dies, its tasks continue ' +
        'elsewhere once their job locks expire (WORKER_LOCK_DURATION_MS)',
      { error: String(error) },
    );
  }
  return false;
}

export interface RecoveryDeps {
  redis: RedisClient;
  keys: KeySpace;
  /** This worker's instance, as its connections and its jobs name it. */
  instance: string;
  queues: QueueWorkers;
  store: TaskStore;
  log: Logger;
  /** WORKER_LIVENESS_CHECK_MS; 0: this worker does not look. */
  intervalMs: number;
}

/** Looks for lost jobs every interval (a gap later while some are filed to be released), until the cleanup. */
export function keepRecoveringLostJobs(deps: RecoveryDeps, cleanup: CleanupStack): void {
  if (deps.intervalMs <= 0) return;
  const lostJobs = new LostJobs(deps.redis, deps.keys, deps.instance, deps.intervalMs);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let round: Promise<void> | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(run, ms);
    timer.unref();
  };
  // Spread over the interval, so that the workers of a queue take turns rather than race for its lease.
  const nextRound = () => deps.intervalMs * (0.9 + Math.random() * 0.2);
  const run = () => {
    round = lookOnce(deps, lostJobs).then(
      // A job filed this round is released by the look a gap later, here if no other worker makes it.
      (filed) => schedule(filed ? lostJobs.gapMs + 50 : nextRound()),
      (error: unknown) => {
        deps.log.warn('look for jobs of gone workers failed', { error: String(error) });
        schedule(nextRound());
      },
    );
  };
  schedule(nextRound());
  cleanup.add('lost-jobs', deps, async () => {
    stopped = true;
    clearTimeout(timer);
    await round;
  });
}

/** One look at each queue; whether some jobs were filed, to be released by the next look. */
async function lookOnce(deps: RecoveryDeps, lostJobs: LostJobs): Promise<boolean> {
  let filed = false;
  for (const [queueName, worker] of [...deps.queues.running()]) {
    const look = await lostJobs.look(queueName, worker);
    filed ||= look.suspects > 0;
    if (look.released.length === 0) continue;
    try {
      // First, so that no next attempt can have started yet: the history always has the loss.
      for (const job of look.released) await noteLost(deps, job);
    } finally {
      await worker.checkStalledNow();
    }
  }
  return filed;
}

/** The task says that the attempt was lost with its worker and waits for another, until a worker starts it. */
async function noteLost(deps: RecoveryDeps, job: LostJob): Promise<void> {
  const { store, log } = deps;
  // A tool job's id is its task id (toolJobOptions).
  const record = await store.get(job.jobId);
  if (!record || isTerminal(record.status)) return;
  const worker = workerOf(job.holder);
  log.warn('attempt lost: its worker is gone, the task goes to another worker', {
    taskId: record.taskId,
    tool: record.tool,
    lostWorker: worker,
    attempt: job.attempt,
  });
  const run = {
    attempt: job.attempt,
    worker,
    ending: AttemptEnding.Lost,
    ...(job.startedAt !== undefined ? { startedAt: job.startedAt } : {}),
  };
  await store.endAttempt(record, run, lostAttemptMessage(job.attempt, worker));
}
