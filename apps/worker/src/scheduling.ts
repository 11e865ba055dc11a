// The worker's side of scheduling (docs/scheduling.md): retries with the tool's backoff, timeouts, and the caps on
// what one principal runs at once. Global concurrency and rate limits need nothing here: BullMQ enforces them when a
// worker fetches a job, from the queue settings this worker applies (applyQueueLimits).
import { isFinalError, retryDelayMs, retryPolicyOf, type Scheduling } from '@mcp-tasks/protocol';
import type { OwnerCaps, RunClaim } from '@mcp-tasks/engine';

/** Thrown to BullMQ to schedule the next run of a job after `delayMs` (the worker's backoffStrategy reads it). */
export class RetryLater extends Error {
  override readonly name = 'RetryLater';
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/** Waits of failures outside the tool (a Redis error while settling, say), as BullMQ's exponential 1 s before. */
const INFRASTRUCTURE_BACKOFF = { baseMs: 1000, maxMs: 60_000 };

/** The BullMQ Worker's `settings.backoffStrategy` for RETRY_BACKOFF_TYPE. */
export function backoffStrategy(attemptsMade: number, _type?: string, error?: Error): number {
  if (error instanceof RetryLater) return error.delayMs;
  return Math.min(INFRASTRUCTURE_BACKOFF.baseMs * 2 ** Math.max(0, attemptsMade - 1), INFRASTRUCTURE_BACKOFF.maxMs);
}

/** A run aborted at its tool's timeoutMs. */
export class RunTimeoutError extends Error {
  override readonly name = 'RunTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`it ran longer than its timeoutMs (${timeoutMs} ms) and was aborted`);
  }
}

export type FailedRunVerdict =
  | { retry: true; delayMs: number; statusMessage: string }
  /** No statusMessage: the plain failure's own (a tool without retries that did not time out). */
  | { retry: false; statusMessage?: string };

/**
 * What follows a failed run: another one after the backoff, unless the error is final, the attempts are spent, or
 * BullMQ would not grant another (`grantedAttempts`: the job's own attempts, fixed when it was queued).
 */
export function afterFailedRun(
  scheduling: Scheduling | undefined,
  run: number,
  grantedAttempts: number,
  error: unknown,
  now = Date.now(),
): FailedRunVerdict {
  const policy = retryPolicyOf(scheduling);
  const attempts = Math.min(policy.attempts, grantedAttempts);
  const what = error instanceof RunTimeoutError ? `timed out after ${error.timeoutMs} ms (timeoutMs)` : 'failed';
  const why = error instanceof RunTimeoutError ? '' : `: ${error instanceof Error ? error.message : String(error)}`;
  const head = `Attempt ${run} of ${attempts} ${what}${why}`;
  if (isFinalError(error)) {
    return attempts > 1 ? { retry: false, statusMessage: `${head}. The error is final: no retry.` } : { retry: false };
  }
  if (run >= attempts) {
    if (attempts > 1) return { retry: false, statusMessage: `${head}. No attempts left.` };
    return error instanceof RunTimeoutError ? { retry: false, statusMessage: head } : { retry: false };
  }
  const delayMs = retryDelayMs(policy, run);
  const at = new Date(now + delayMs).toISOString();
  return {
    retry: true,
    delayMs,
    statusMessage: `${head}. Attempt ${run + 1} starts at ${at} (in ${formatSeconds(delayMs)}).`,
  };
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

/** The statusMessage of a task held back by a per-principal cap. */
export function queuedBehindMessage(
  reply: { runningAll: number; runningTool: number },
  caps: { all: number | undefined; tool: number | undefined },
  tool: string,
): string {
  if (caps.all !== undefined && reply.runningAll >= caps.all) {
    return (
      `Queued behind ${reply.runningAll} of your own tasks: at most ${caps.all} of a requestor's tasks run at once ` +
      '(MAX_RUNNING_PER_OWNER). It starts when one of them ends.'
    );
  }
  return (
    `Queued behind ${reply.runningTool} of your own tasks of tool '${tool}': at most ${caps.tool ?? 0} of them run ` +
    "at once per requestor (the tool's maxRunningPerOwner). It starts when one of them ends."
  );
}

/**
 * The runs this worker holds under per-principal caps: their leases are renewed while they run (a crashed worker's
 * run out, which gives its slots back).
 */
export class HeldRuns {
  readonly #claims = new Map<string, RunClaim>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly caps: OwnerCaps) {}

  add(taskId: string, claim: RunClaim): void {
    this.#claims.set(taskId, claim);
  }

  /** Forgets the run and ends its lease, starting the principal's next parked job. */
  async release(taskId: string, claim: RunClaim): Promise<void> {
    if (this.#claims.get(taskId) === claim) this.#claims.delete(taskId);
    await this.caps.release(claim);
  }

  /** Forgets the run without ending its lease (another attempt of the job holds it now). */
  forget(taskId: string, claim: RunClaim): void {
    if (this.#claims.get(taskId) === claim) this.#claims.delete(taskId);
  }

  start(renewEveryMs: number, sweepEveryMs: number, onError: (error: unknown) => void): void {
    let sweptAt = Date.now();
    this.#timer = setInterval(
      () => {
        void this.caps.renew([...this.#claims.values()]).catch(onError);
        if (Date.now() - sweptAt >= sweepEveryMs) {
          sweptAt = Date.now();
          void this.caps.sweep().catch(onError);
        }
      },
      Math.min(renewEveryMs, sweepEveryMs),
    );
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
