// How a tool's calls are scheduled (docs/scheduling.md): global concurrency, a rate limit on starts, retries of the
// errors the tool throws, a timeout per run, and a cap on what one principal runs at once. Declared in the tool's
// definition, overridden per tool by operators, published in the catalog so that api replicas and operators see it.
import { z } from 'zod';

export const BackoffType = { Fixed: 'fixed', Exponential: 'exponential' } as const;
export type BackoffType = (typeof BackoffType)[keyof typeof BackoffType];

/** BullMQ's largest priority (2^21 - 1): the fair order of waiting jobs is kept below it (docs/scheduling.md). */
export const MAX_JOB_PRIORITY = 2_097_151;

const positiveInt = (max = Number.MAX_SAFE_INTEGER) => z.number().int().min(1).max(max);

/** What a retry policy's fields are when a tool's `retry` leaves them out (docs/scheduling.md). */
const RETRY_DEFAULTS = { attempts: 1, type: BackoffType.Exponential, delayMs: 1000, maxDelayMs: 60_000 } as const;
/** A rate limit's window when `rateLimit` gives only `max`. */
export const DEFAULT_RATE_LIMIT_PER_MS = 1000;

// A partial setting takes the documented default for each field it leaves out (`retry: { attempts: 3 }` is a whole
// policy), so that what a tool declares, what operators override and what the catalog publishes are whole settings.
export const RetryPolicySchema = z.strictObject({
  /** Runs in all, the first included (1: no retry). */
  attempts: positiveInt(100).default(RETRY_DEFAULTS.attempts),
  backoff: z
    .strictObject({
      type: z.enum([BackoffType.Fixed, BackoffType.Exponential]).default(RETRY_DEFAULTS.type),
      /** The wait before the second run; exponential doubles it for each further run. */
      delayMs: z.number().int().min(0).max(86_400_000).default(RETRY_DEFAULTS.delayMs),
    })
    .prefault({}),
  /** No wait is longer than this. */
  maxDelayMs: z.number().int().min(0).max(86_400_000).default(RETRY_DEFAULTS.maxDelayMs),
});
export type RetryPolicy = z.infer<typeof RetryPolicySchema>;

export const RateLimitSchema = z.strictObject({
  // No default: a limit without its number would limit nothing the operator chose.
  max: z
    .number({ error: (issue) => (issue.input === undefined ? 'required: the most starts per window' : undefined) })
    .int()
    .min(1)
    .max(1_000_000),
  perMs: positiveInt(86_400_000).default(DEFAULT_RATE_LIMIT_PER_MS),
});

export const SchedulingSchema = z.strictObject({
  /** The most runs of the tool at once across all workers. */
  concurrency: positiveInt(1_000_000).optional(),
  /** The most starts per window across all workers. */
  rateLimit: RateLimitSchema.optional(),
  retry: RetryPolicySchema.optional(),
  /** A run longer than this is aborted and counts as a failed attempt. */
  timeoutMs: positiveInt(86_400_000).optional(),
  /** The most runs of the tool one principal has at once (MAX_RUNNING_PER_OWNER caps all tools together). */
  maxRunningPerOwner: positiveInt(1_000_000).optional(),
});
/** Settings in force: every field of a given `retry` or `rateLimit` is there. */
export type Scheduling = z.output<typeof SchedulingSchema>;
/** Settings as a tool or an operator may write them: any field of `retry` or `rateLimit` may be left out. */
export type SchedulingInput = z.input<typeof SchedulingSchema>;

/** What a tool gets when neither its definition nor an operator says otherwise. */
export const DEFAULT_RETRY: RetryPolicy = RetryPolicySchema.parse({});

/** The tool's settings with an operator's override laid over them field by field (an override wins). */
export function mergeScheduling(declared: Scheduling | undefined, override: Scheduling | undefined): Scheduling {
  const merged: Scheduling = { ...declared, ...override };
  for (const key of Object.keys(merged) as (keyof Scheduling)[]) if (merged[key] === undefined) delete merged[key];
  return merged;
}

export function retryPolicyOf(scheduling: Scheduling | undefined): RetryPolicy {
  return scheduling?.retry ?? DEFAULT_RETRY;
}

/** How long to wait before run `failedRun + 1`, after run `failedRun` (1-based) failed. */
export function retryDelayMs(policy: RetryPolicy, failedRun: number): number {
  const { type, delayMs } = policy.backoff;
  const delay = type === BackoffType.Fixed ? delayMs : delayMs * 2 ** Math.max(0, failedRun - 1);
  return Math.min(delay, policy.maxDelayMs);
}

/**
 * A tool throws this for an error that another run cannot fix (bad input, a refused permission): the task fails at
 * once whatever its retry policy says.
 */
export class FinalError extends Error {
  override readonly name = 'FinalError';
}

/** The names of the errors that end a task without retry (by name: a tool bundle may carry its own copy of a class). */
const FINAL_ERROR_NAMES: ReadonlySet<string> = new Set([
  'FinalError',
  // BullMQ's.
  'UnrecoverableError',
  // Protocol errors (invalid arguments), and a failed child's: another attempt would wait for the same child.
  'ProtocolError',
  'ChildTaskError',
]);

/** Whether a thrown error ends the task without retry (docs/scheduling.md). */
export function isFinalError(error: unknown): boolean {
  return error instanceof Error && FINAL_ERROR_NAMES.has(error.name);
}
