// The mapping from a BullMQ job state (plus our task record) to the MCP task status. Our record is the source of
// truth while it says anything definite; the job state decides only when the record and the job disagree, as
// after a crash between writing one and the other, or when BullMQ failed a job without our code running
// (a job that stalled too often).
import type { JobState } from 'bullmq';
import type { TaskRecord } from './task.ts';
import { isTerminal, TaskStatus } from './task-status.ts';

/** Every state BullMQ can report, `unknown` meaning the job does not exist. */
export type ObservedJobState = JobState | 'unknown';

export const JobPhase = {
  Queued: 'queued',
  Running: 'running',
  Finished: 'finished',
  Failed: 'failed',
  Missing: 'missing',
} as const;
export type JobPhase = (typeof JobPhase)[keyof typeof JobPhase];

/** Exhaustive: a new BullMQ state does not compile until it is mapped here. */
export const JOB_PHASE: Record<ObservedJobState, JobPhase> = {
  waiting: JobPhase.Queued,
  prioritized: JobPhase.Queued,
  delayed: JobPhase.Queued,
  'waiting-children': JobPhase.Queued,
  active: JobPhase.Running,
  completed: JobPhase.Finished,
  failed: JobPhase.Failed,
  unknown: JobPhase.Missing,
};

export type Reconciliation =
  | { action: 'none'; status: TaskStatus }
  | { action: 'fail'; status: typeof TaskStatus.Failed; statusMessage: string }
  | { action: 'adopt'; status: TaskStatus };

/**
 * What the task's status must be given its record and its job. `fail` means the record is stuck non-terminal
 * while its job can no longer settle it; `adopt` means the job finished with an outcome the record has not taken
 * yet (an external consumer's job whose event is still on its way, or was missed), so the caller settles the task
 * from the job itself. Either is applied through the atomic transition.
 */
export function reconcile(
  record: Pick<TaskRecord, 'status' | 'external'>,
  jobState: ObservedJobState,
  failedReason?: string,
): Reconciliation {
  if (isTerminal(record.status)) return { action: 'none', status: record.status };
  // Waiting for an external system's callback: its job finished on purpose after the submission (the api settles
  // the task when the callback comes, or the ttl ends it), so a finished or missing job says nothing.
  if (record.external?.mode === 'callback' && jobState !== 'failed') return { action: 'none', status: record.status };
  // An external consumer finishing its job is the normal end; its jobs are kept a while after they finish
  // (externalJobOptions), so the outcome can still be read there.
  if (record.external?.mode === 'queue' && (jobState === 'completed' || jobState === 'failed'))
    return { action: 'adopt', status: record.status };
  switch (JOB_PHASE[jobState]) {
    case JobPhase.Queued:
    case JobPhase.Running:
      return { action: 'none', status: record.status };
    case JobPhase.Finished:
      return fail('The worker finished the job without recording a result.');
    case JobPhase.Failed:
      return fail(`The worker gave up on the task: ${failedReason ?? 'no reason was recorded'}`);
    case JobPhase.Missing:
      return fail('The task was lost: its job no longer exists in the queue.');
  }
}

function fail(statusMessage: string): Reconciliation {
  return { action: 'fail', status: TaskStatus.Failed, statusMessage };
}
