// The one place where what an attempt came to (RunOutcome) takes effect: the task's settlement, the job moved back to
// the delayed set (BullMQ's DelayedError), its next run after the backoff (RetryLater), or nothing; and with it the
// attempt's log line, its trace attributes and the scheduling counters.
import { DelayedError, type Job } from 'bullmq';
import { AttemptEnding, handedBackMessage, type AttemptRun, type ToolJobData } from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';
import {
  ErrorCode,
  isTerminal,
  settleWithError,
  settleWithResult,
  TaskStatus,
  WaitKind,
  type Settlement,
} from '@mcp-tasks/protocol';
import { attemptRun, type Attempt, type AttemptDeps } from './attempt.ts';
import { inChildSpan, type JobTrace } from './job-trace.ts';
import type { AttemptRefusal, RunOutcome, Skip } from './run-outcome.ts';
import { AbortReason } from './running-tasks.ts';
import { RetryLater, RunTimeoutError } from './scheduling.ts';

type Outcome<K extends RunOutcome['kind']> = Extract<RunOutcome, { kind: K }>;

export async function concludeRun(deps: AttemptDeps, attempt: Attempt, outcome: RunOutcome): Promise<void> {
  const { log, traced } = attempt;
  switch (outcome.kind) {
    case 'completed':
      return settle(deps, attempt, settleWithResult(outcome.result), outcome.endsChildren);
    case 'failed':
      countTimeout(deps, attempt, outcome.error);
      log.warn('tool failed', failureFields(outcome.error));
      return settle(
        deps,
        attempt,
        failedSettlement(attempt.job.data.tool, outcome.error, outcome.statusMessage),
        outcome.endsChildren,
      );
    case 'interrupted':
      return settle(deps, attempt, interruptedSettlement(attempt.job.data.tool), outcome.endsChildren);
    case 'retryLater':
      countTimeout(deps, attempt, outcome.error);
      return retryLater(deps, attempt, outcome);
    case 'held':
      return hold(deps, attempt, outcome);
    case 'parked':
      return park(deps, attempt, outcome);
    case 'pollLater':
      return moveBack(attempt, Date.now() + outcome.delayMs);
    case 'handedBack':
      // Without spending an attempt: another worker picks the job up.
      log.info('handing the task back on shutdown');
      await noteHandBack(deps, attempt);
      return moveBack(attempt, Date.now());
    case 'lockLost':
      // No settlement: the job's next attempt (stalled-job recovery) runs the tool again and settles the task.
      log.warn('tool stopped: this worker lost the job lock, so the task is left to the next attempt', {
        reason: AbortReason.LockLost,
      });
      traced?.note({ 'mcp.task.stopped': AbortReason.LockLost });
      return;
    case 'stopped':
      log.info('tool stopped', { reason: outcome.reason });
      traced?.note({ 'mcp.task.stopped': outcome.reason });
      return;
    case 'noSettlement':
      return;
    case 'skipped':
      return reportSkip(log, attempt.job, traced, outcome.skip);
  }
}

/** Logs and notes why a job ran nothing; `log` is the job's own, except for a job whose task is gone. */
export function reportSkip(log: Logger, job: Job<ToolJobData>, traced: JobTrace | undefined, skip: Skip): void {
  switch (skip.reason) {
    case 'gone':
      log.info('skipping job: its task expired or was deleted', {
        taskId: job.data.taskId,
        tool: job.data.tool,
        jobAttempt: job.attemptsStarted,
      });
      traced?.note({ 'mcp.task.skipped': 'missing' });
      return;
    case 'terminal':
      log.info('skipping job: its task is already terminal', { status: skip.status });
      traced?.note({ 'mcp.task.skipped': 'terminal' });
      return;
    case 'refused':
      log.info('skipping job: its task cannot start this attempt', refusalFields(skip.refusal, 'status'));
      traced?.note({ 'mcp.task.skipped': skip.refusal.reason });
      return;
  }
}

/**
 * A failed run's error as its log line carries it: the message, and the stack that says where the tool threw (the
 * task's error, which the audit line and the client see, carries no stack). A timeout's stack is the timer's: left out.
 */
function failureFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  if (error instanceof RunTimeoutError) return { error: error.message };
  return { error: String(error), stack: error.stack };
}

/** A timeout is a RunTimeoutError, which only the run's own timer makes (run-tool.ts). */
function countTimeout(deps: AttemptDeps, attempt: Attempt, error: unknown): void {
  if (error instanceof RunTimeoutError) deps.count?.(attempt.job.data.tool, 'timeouts');
}

async function retryLater(deps: AttemptDeps, attempt: Attempt, retry: Outcome<'retryLater'>): Promise<void> {
  // The task stays working and says why and when the next run starts; BullMQ delays the job (backoffStrategy).
  const run = runOf(deps, attempt, AttemptEnding.Failed);
  const noted = await deps.store.note(attempt.record, TaskStatus.Working, retry.statusMessage, {
    attempt: attempt.fence,
    ...(run ? { run } : {}),
  });
  if (!noted.ok) return;
  deps.count?.(attempt.job.data.tool, 'retries');
  attempt.log.warn('tool failed: retrying', { run: retry.run, delayMs: retry.delayMs, ...failureFields(retry.error) });
  attempt.traced?.note({ 'mcp.task.retry': retry.run });
  throw new RetryLater(retry.statusMessage, retry.delayMs);
}

async function hold(deps: AttemptDeps, attempt: Attempt, held: Outcome<'held'>): Promise<never> {
  const { record } = attempt;
  // A held job is started again by every release of its principal and every sweep (OWNER_CAP_RECHECK_MS, on each
  // worker) and held again: only a change is news, for the task's history, its client and the counter.
  if (record.statusMessage !== held.statusMessage) {
    await deps.store.note(record, record.status, held.statusMessage);
    deps.count?.(attempt.job.data.tool, 'parked');
    attempt.log.info('task held back by a per-requestor cap', { ...held.admission, admitted: undefined });
  }
  attempt.traced?.note({ 'mcp.task.held': 'per-requestor cap' });
  return moveBack(attempt, Date.now() + held.parkMs);
}

/**
 * Parks the job on its tool's wait (docs/durable-execution.md, "Waits"): the task says what it waits for and until
 * when, and the job waits in the delayed set until then, or until an event or the client's answer wakes it
 * (TaskSignals.wake). An answer that came while the job was still being moved found nothing to wake: it is looked for
 * once the job is parked.
 */
async function park(deps: AttemptDeps, attempt: Attempt, parked: Outcome<'parked'>): Promise<void> {
  const { record, log, traced } = attempt;
  const { wait, statusMessage, requestId } = parked.parking;
  const status = wait.kind === WaitKind.Input ? TaskStatus.InputRequired : TaskStatus.Working;
  // The attempt ends parked, so that the wake's attempt does not read it as lost with its worker.
  const run = runOf(deps, attempt, AttemptEnding.Parked);
  const moved = await deps.store.transition(record, status, {
    statusMessage,
    from: [TaskStatus.Working],
    ...(attempt.fence !== undefined ? { attempt: attempt.fence, ...(run ? { run } : {}) } : {}),
  });
  // Refused when the task is where it should be already (input_required since its request went out), or waits for
  // its client otherwise; else it ended (cancelled) or a later attempt runs it: nothing to park.
  if (!moved.ok && (moved.reason !== 'rejected' || isTerminal(moved.current))) {
    // Ended (a cancel that came while the wait was stored): nothing waits any more, a parked question included.
    if (moved.reason !== 'stale') {
      const withdrawn = await deps.store.waits.abandon({
        ...record,
        wait: { ...wait, ...(requestId ? { requestId } : {}) },
      });
      if (withdrawn !== undefined) {
        await deps.inputs.abandoned(record, withdrawn, 'The task no longer needs the answer.').catch(() => undefined);
      }
    }
    log.info('task not parked: it ended or a later attempt runs it', { reason: moved.reason });
    return;
  }
  log.info('task parked', { wait: wait.kind, until: new Date(wait.until).toISOString(), key: wait.key });
  traced?.note({ 'mcp.task.parked': wait.kind });
  if (!attempt.token) throw new Error('cannot park a job without its lock token');
  await attempt.job.moveToDelayed(wait.until, attempt.token);
  if (wait.kind !== WaitKind.Sleep && (await deps.store.waits.settled(record.taskId, wait.key, requestId))) {
    await attempt.job.promote().catch(() => undefined);
  }
  throw new DelayedError();
}

/** Moves the job back to the delayed set until `at`, which spends no attempt, and tells BullMQ so. */
async function moveBack({ job, token }: Attempt, at: number): Promise<never> {
  if (!token) throw new Error('cannot move a job back to the delayed set without its lock token');
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/**
 * The attempt for the history entry of a move (TaskStore's `run`); none for an external tool's poll, which is no
 * attempt of its own (unfenced). A settlement's run needs no ending: the terminal status ends it.
 */
function runOf(deps: AttemptDeps, attempt: Attempt, ending?: AttemptEnding): AttemptRun | undefined {
  const { fence } = attempt;
  return fence === undefined ? undefined : attemptRun({ ...attempt, fence }, deps.workerName, ending);
}

/**
 * The task says that its attempt was handed back and waits for another worker, the record counts the hand-back (the
 * next run's ctx.attempt includes it); best effort: the job goes back to the queue whatever comes of it.
 */
async function noteHandBack(deps: AttemptDeps, attempt: Attempt): Promise<void> {
  const run = runOf(deps, attempt, AttemptEnding.HandedBack);
  if (!run) return;
  const message = handedBackMessage(run.attempt, deps.workerName);
  await deps.store
    .endAttempt(attempt.record, { ...run, ending: AttemptEnding.HandedBack }, message)
    .catch((error: unknown) => attempt.log.warn('hand-back not noted on the task', { error: String(error) }));
}

async function settle(deps: AttemptDeps, attempt: Attempt, settlement: Settlement, endsChildren?: true): Promise<void> {
  const { record: task, traced, log } = attempt;
  const run = runOf(deps, attempt);
  const options = attempt.fence === undefined ? {} : { attempt: attempt.fence, ...(run ? { run } : {}) };
  let moved;
  if (!traced) moved = await deps.store.settle(task, settlement, options);
  else {
    traced.note({ 'mcp.task.status': settlement.status });
    moved = await inChildSpan(
      traced.context,
      `settle ${settlement.status}`,
      { 'mcp.task.id': task.taskId, 'mcp.task.status': settlement.status },
      async (span) => {
        const result = await deps.store.settle(task, settlement, options);
        span?.setAttribute('mcp.task.transition', result.ok ? 'applied' : result.reason);
        return result;
      },
    );
  }
  // The audit record of the transition (task.completed / task.failed, auditObserver) is the info line of a
  // settlement; this one, with the job's attempt, is for debugging (LOG_LEVEL=debug), and is not even built otherwise.
  if (moved.ok) {
    if (log.isDebugEnabled()) log.debug('task settled', { status: settlement.status });
    if (endsChildren) await stopChildren(deps, attempt);
  }
  // Cancelled (or expired) first: that status stands (T-CANCEL-3) and this outcome is dropped. Or a later attempt
  // runs the task now (this worker lost the job's lock): that attempt settles it.
  else log.info('task outcome dropped', refusalFields(moved, 'current'));
}

/** Cancels the child tasks still running of a task that has ended (docs/durable-execution.md, "Child tasks"). */
async function stopChildren(deps: AttemptDeps, attempt: Attempt): Promise<void> {
  const { taskId } = attempt.record;
  try {
    const cancelled = await deps.children.tasks.cancelChildren(taskId, `Cancelled: its parent task ${taskId} ended.`);
    if (cancelled > 0) attempt.log.info('child tasks cancelled: their parent ended', { children: cancelled });
  } catch (error) {
    // The children then run to their end, or to their expiry (no later than the parent's).
    attempt.log.warn('child tasks of an ended task not cancelled', { error: String(error) });
  }
}

/** The fields of a refused move, as the log lines about it carry them (the task's status under `currentAs`). */
function refusalFields(refusal: AttemptRefusal, currentAs: 'status' | 'current'): Record<string, unknown> {
  return {
    reason: refusal.reason,
    ...(refusal.reason === 'missing' ? {} : { [currentAs]: refusal.current }),
    ...(refusal.reason === 'stale' ? { latestAttempt: refusal.attempt } : {}),
  };
}

function failedSettlement(tool: string, error: unknown, statusMessage: string | undefined): Settlement {
  const failed = settleWithError(tool, error);
  return statusMessage !== undefined ? { ...failed, statusMessage } : failed;
}

function interruptedSettlement(tool: string): Settlement {
  return {
    status: TaskStatus.Failed,
    statusMessage: `The worker running this task stopped before it finished, and tool '${tool}' is not safe to run twice.`,
    outcome: {
      error: {
        code: ErrorCode.InternalError,
        message: `Tool '${tool}' was interrupted and is not retry-safe`,
        data: { tool },
      },
    },
  };
}
