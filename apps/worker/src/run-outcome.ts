// What one attempt of a tool job comes to, as a value (Temporal's activity model: an activity returns its result or
// a typed failure, and its caller acts on it). The steps of an attempt decide it and settle nothing themselves;
// `concludeRun` (conclude-run.ts) is the one place that turns it into the task's settlement, BullMQ's DelayedError or
// RetryLater, or nothing. An error thrown instead (Redis failing, say) is no outcome: BullMQ retries the job.
import type { InputBroker, OwnerCaps } from '@mcp-tasks/engine';
import type { CallToolResult, TaskStatus } from '@mcp-tasks/protocol';
import type { Parking } from './durable-waits.ts';
import type { AbortReason } from './running-tasks.ts';

export type RunOutcome =
  /**
   * The tool answered (an `isError` result included): the task settles with its result. `endsChildren`: the task
   * started child tasks (ctx.callTool); those still running are cancelled once it has ended.
   */
  | { readonly kind: 'completed'; readonly result: CallToolResult; readonly endsChildren?: true }
  /**
   * The task fails with `error`, and nothing runs it again: the error is final, the attempts are spent, or it is not
   * the tool's (an unknown tool, an invalid result). `statusMessage`: the retry policy's account, when it has one.
   */
  | {
      readonly kind: 'failed';
      readonly error: unknown;
      readonly statusMessage?: string | undefined;
      readonly endsChildren?: true;
    }
  /** The run failed and the tool's retry policy runs it again after `delayMs`; the task stays working meanwhile. */
  | {
      readonly kind: 'retryLater';
      readonly error: unknown;
      /** The run that failed (1 for the first). */
      readonly run: number;
      readonly delayMs: number;
      readonly statusMessage: string;
    }
  /** The tool was stopped: its task was cancelled, is gone, or (without a job token) its worker shuts down. */
  | { readonly kind: 'stopped'; readonly reason: Exclude<AbortReason, 'timeout' | 'lock-lost'> }
  /** The tool was stopped because this worker lost the job's lock: the job's next attempt runs it and settles. */
  | { readonly kind: 'lockLost' }
  /** The tool was stopped by this worker's shutdown: the job goes back to the queue without spending an attempt. */
  | { readonly kind: 'handedBack' }
  /** The run was cut off (its worker died, lost the lock or shut down) and its tool is not safe to run twice. */
  | { readonly kind: 'interrupted'; readonly endsChildren?: true }
  /** Held back by a per-principal cap: the job is parked until one of the principal's runs ends, or `parkMs`. */
  | { readonly kind: 'held'; readonly statusMessage: string; readonly admission: Refused; readonly parkMs: number }
  /** An external tool's work runs on: its status is polled again after `delayMs`, the slot free meanwhile. */
  | { readonly kind: 'pollLater'; readonly delayMs: number }
  /**
   * The job ends and this attempt settles nothing: the external system reports the outcome to the api (callback),
   * or the task ended while the external work was being submitted or polled.
   */
  | { readonly kind: 'noSettlement' }
  /**
   * The tool parked on a wait (a sleep, an event, its client's answer): the job goes to the delayed set until the
   * wait's end, without spending an attempt, and the task stays live (docs/durable-execution.md, "Waits").
   */
  | { readonly kind: 'parked'; readonly parking: Parking }
  /** Nothing was run: the task is gone or ended, or it refused this attempt's start. */
  | { readonly kind: 'skipped'; readonly skip: Skip };

export type Skip =
  /** The task expired or was deleted before its job started. */
  | { readonly reason: 'gone' }
  | { readonly reason: 'terminal'; readonly status: TaskStatus }
  /** The task refused this attempt's start (InputBroker.beginAttempt): it ended or vanished, or a later one began. */
  | { readonly reason: 'refused'; readonly refusal: AttemptRefusal };

export type AttemptRefusal = Extract<Awaited<ReturnType<InputBroker['beginAttempt']>>, { ok: false }>;

/** The per-principal cap's answer that holds a job back: how many of the principal's runs hold the slots. */
type Refused = Extract<Awaited<ReturnType<OwnerCaps['admit']>>, { admitted: false }>;

export const HANDED_BACK: RunOutcome = { kind: 'handedBack' };
export const INTERRUPTED: RunOutcome = { kind: 'interrupted' };
export const LOCK_LOST: RunOutcome = { kind: 'lockLost' };
export const NO_SETTLEMENT: RunOutcome = { kind: 'noSettlement' };
