// What the steps of one attempt of a tool job share: the processor's dependencies, and the attempt itself once its
// task has been read.
import type { Job } from 'bullmq';
import type {
  AttemptEnding,
  AttemptRun,
  OwnerCaps,
  SchedulingCounter,
  TaskStore,
  ToolJobData,
} from '@mcp-tasks/engine';
import type { Logger } from '@mcp-tasks/runtime';
import type { Scheduling, TaskRecord, ToolRegistry } from '@mcp-tasks/protocol';
import type { ChildCallDeps } from './child-calls.ts';
import type { DelayedCalls } from './delayed-calls.ts';
import type { DurableLimits } from './durable-run.ts';
import type { WaitDeps } from './durable-waits.ts';
import type { ExternalDeps } from './external-job.ts';
import type { JobTrace } from './job-trace.ts';
import type { RunningTasks } from './running-tasks.ts';
import type { HeldRuns } from './scheduling.ts';
import type { ContextDeps } from './tool-context.ts';

export interface JobDeps extends ContextDeps {
  store: TaskStore;
  /** The tools this worker serves now (they change when an upstream's list does). */
  tools: Pick<ToolRegistry, 'get' | 'parseArguments'>;
  running: RunningTasks;
  log: Logger;
  /** What external tools need (docs/external-tools.md); absent: they fail with a clear message. */
  external?: ExternalDeps;
  /** A first attempt still running after this long gets its "Running on <worker>." note (RUNNING_NOTE_AFTER_MS). */
  runningNoteAfterMs: number;
  /** The tool's scheduling settings as this worker publishes them (docs/scheduling.md). */
  scheduling?: (tool: string) => Scheduling | undefined;
  /** Per-principal caps; absent: none. */
  caps?: { owner: OwnerCaps; held: HeldRuns; maxRunningPerOwner: number | undefined; parkMs: number };
  /** Counts a scheduling event for operators (best effort). */
  count?: (tool: string, counter: SchedulingCounter) => void;
  /** The bounds of what a task keeps durably (DURABLE_MAX_BYTES, DURABLE_MAX_STEPS; docs/durable-execution.md). */
  durable: DurableLimits;
  /** What ctx.callTool needs (child-calls.ts). */
  children: ChildCallDeps;
  /** What ctx.sleep, waitForEvent and signalTask need beside the store (durable-waits.ts). */
  durableWaits: Pick<WaitDeps, 'signals' | 'maxWaits'>;
}

/** What one processor's attempts share: the deps, and the running notes of its first attempts, on one timer. */
export interface AttemptDeps extends JobDeps {
  runningNotes: DelayedCalls;
  /** `Running on <worker>.`: the statusMessage of a task while a run of this worker is under way. */
  runningNote: string;
}

/** One attempt of a job whose task exists. */
export interface Attempt {
  readonly job: Job<ToolJobData>;
  /** The job's lock token; only with it can the attempt move the job back to the delayed set. */
  readonly token: string | undefined;
  readonly traced: JobTrace | undefined;
  /** The task as read when the attempt started. */
  readonly record: TaskRecord;
  /** The job's logger: its lines carry the task, tool, job attempt and owner. */
  readonly log: Logger;
  /**
   * The number the attempt's moves of the task carry (BullMQ's count of the job's starts): a later attempt's start
   * outdates it. Undefined for an external tool, whose every poll is an attempt of its own.
   */
  readonly fence: number | undefined;
}

/** An attempt of a tool this worker runs itself: all its moves carry its number. */
export interface FencedAttempt extends Attempt {
  readonly fence: number;
}

/**
 * The attempt as the history entry of its moves records it (TaskStore's `run`): its number, its worker, its start (when
 * BullMQ gave the job to this worker) and, once known, how it ended.
 */
export function attemptRun(attempt: FencedAttempt, worker: string, ending?: AttemptEnding): AttemptRun {
  return {
    attempt: attempt.fence,
    worker,
    startedAt: attempt.job.processedOn ?? Date.now(),
    ...(ending !== undefined ? { ending } : {}),
  };
}
