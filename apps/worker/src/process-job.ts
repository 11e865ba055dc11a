// Runs one tool job: checks the task is still wanted, runs the tool with its context, and settles the task with
// the result mapping. The task record, not BullMQ's job, carries the outcome.
import { DelayedError, type Job } from 'bullmq';
import {
  describeIssues,
  isTerminal,
  ProtocolError,
  ErrorCode,
  isExternalTool,
  settleWithError,
  settleWithResult,
  TaskStatus,
  type Scheduling,
  type Settlement,
  type TaskRecord,
  type ToolDefinition,
  type ToolRegistry,
} from '@mcp-tasks/protocol';
import type { Logger, OwnerCaps, RunClaim, SchedulingCounter, TaskStore, ToolJobData } from '@mcp-tasks/engine';
import { runExternalJob, type ExternalDeps } from './external-job.ts';
import { inChildSpan, startJobTrace, type JobTrace } from './job-trace.ts';
import { AbortReason, type RunningTasks } from './running-tasks.ts';
import { afterFailedRun, queuedBehindMessage, RetryLater, RunTimeoutError, type HeldRuns } from './scheduling.ts';
import { DelayedCalls } from './delayed-calls.ts';
import { attachResumePoint, resumableUpstreamTask } from './resume-point.ts';
import { createToolContext, type ContextDeps } from './tool-context.ts';
import { checkToolResult } from './tool-result.ts';

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
}

/** A job held back by a per-principal cap goes back to the queue after this long, if nothing starts it earlier. */
export const PARK_MS = 60_000;

/**
 * The BullMQ processor. It declares two parameters, so BullMQ makes no AbortController of its own per job (see
 * DESIGN.md): a run's signal is the one RunningTasks gives it.
 */
export function toolProcessor(jobDeps: JobDeps) {
  const deps: RunDeps = { ...jobDeps, runningNotes: new DelayedCalls(jobDeps.runningNoteAfterMs) };
  return (job: Job<ToolJobData>, token?: string) => processJob(deps, job, token);
}

/** What the processor's steps share: the deps, and the running notes of its first attempts, on one timer. */
interface RunDeps extends JobDeps {
  runningNotes: DelayedCalls;
}

async function processJob(deps: RunDeps, job: Job<ToolJobData>, token: string | undefined): Promise<void> {
  const traced = startJobTrace(job, deps.workerName);
  if (!traced) return runAttempt(deps, job, token, undefined);
  try {
    await runAttempt(deps, job, token, traced);
    traced.end();
  } catch (error) {
    // Handing the job back (shutdown) is no failure of the attempt.
    traced.end(error instanceof DelayedError ? undefined : error);
    throw error;
  }
}

async function runAttempt(
  deps: RunDeps,
  job: Job<ToolJobData>,
  token: string | undefined,
  traced: JobTrace | undefined,
): Promise<void> {
  const { store, tools } = deps;
  const { taskId } = job.data;
  // BullMQ counts the starts of a job, so a later attempt has a higher number: it fences this one's moves.
  const attempt = job.attemptsStarted;
  const record = await store.get(taskId);
  if (!record) {
    deps.log.info('skipping job: its task expired or was deleted', {
      taskId,
      tool: job.data.tool,
      jobAttempt: attempt,
    });
    traced?.note({ 'mcp.task.skipped': 'missing' });
    return;
  }
  // One child logger per job (its fields are merged into each line it writes).
  const log = deps.log.child({ taskId, tool: job.data.tool, jobAttempt: attempt, owner: record.owner });
  if (isTerminal(record.status)) {
    log.info('skipping job: its task is already terminal', { status: record.status });
    traced?.note({ 'mcp.task.skipped': 'terminal' });
    return;
  }

  let tool;
  try {
    tool = tools.get(job.data.tool);
  } catch {
    await settle(
      deps,
      record,
      settleWithError(
        job.data.tool,
        new ProtocolError(ErrorCode.MethodNotFound, `This worker has no tool '${job.data.tool}'`),
      ),
      log,
      attempt,
      traced,
    );
    return;
  }
  if (isExternalTool(tool)) {
    // Submission is idempotent per task id and re-runs of a poll are the design, so retrySafe does not apply; nor
    // does the attempt fence: every poll is a new attempt, and the external system has one outcome to report.
    const outcome = await runExternalJob(deps, job, token, record, tool, log);
    if (outcome) await settle(deps, record, outcome, log, undefined, traced);
    return;
  }
  const scheduling = deps.scheduling?.(tool.name);
  let claim: RunClaim | undefined;
  const caps = deps.caps;
  if (caps && token && caps.owner.applies(scheduling?.maxRunningPerOwner)) {
    const admission = await caps.owner.admit(
      record.owner,
      tool.name,
      job.queueName,
      taskId,
      scheduling?.maxRunningPerOwner,
    );
    if (!admission.admitted) {
      // Parked until one of the principal's runs ends (OwnerCaps): the slot goes to other principals meanwhile.
      const message = queuedBehindMessage(
        admission,
        { all: caps.maxRunningPerOwner, tool: scheduling?.maxRunningPerOwner },
        tool.name,
      );
      // A held job is started again by every release of its principal and every sweep (OWNER_CAP_RECHECK_MS, on
      // each worker) and held again: only a change is news, for the task's history, its client and the counter.
      if (record.statusMessage !== message) {
        await deps.store.note(record, record.status, message);
        deps.count?.(tool.name, 'parked');
        log.info('task held back by a per-requestor cap', { ...admission, admitted: undefined });
      }
      traced?.note({ 'mcp.task.held': 'per-requestor cap' });
      await job.moveToDelayed(Date.now() + caps.parkMs, token);
      throw new DelayedError();
    }
    claim = admission.claim;
    caps.held.add(taskId, claim);
  }
  let keepClaim = false;
  try {
    keepClaim = await runTool(deps, job, token, record, tool, scheduling, attempt, log, traced);
  } finally {
    if (claim && caps) {
      if (keepClaim) caps.held.forget(taskId, claim);
      else
        await caps.held
          .release(taskId, claim)
          .catch((error: unknown) => log.warn('run lease not released', { error: String(error) }));
    }
  }
}

/**
 * Runs the tool once and settles the task, or schedules the next run (RetryLater). Answers true when another
 * attempt of the job holds the task now (the lock was lost), so this one keeps its per-principal lease.
 */
async function runTool(
  deps: RunDeps,
  job: Job<ToolJobData>,
  token: string | undefined,
  record: TaskRecord,
  tool: ToolDefinition,
  scheduling: Scheduling | undefined,
  attempt: number,
  log: Logger,
  traced: JobTrace | undefined,
): Promise<boolean> {
  const { store, tools, running } = deps;
  const { taskId } = job.data;
  const runningNote = `Running on ${deps.workerName}.`;
  // A first attempt has no earlier attempt to fence off and no requests of one to withdraw: its moves carry its
  // number, which a later attempt's start outdates. It is only noted as running, and only if it still runs after
  // a short while: most tools end before, and the note would cost them a transition (a round trip, a history
  // entry, a stream event and two publishes).
  const begun =
    attempt <= 1
      ? ({ ok: true } as const)
      : // From here on an earlier attempt (a worker that died, or lost the job's lock and runs on) can no longer move
        // the task, and the input requests it left waiting are withdrawn (T-INPUT-4).
        await deps.inputs.beginAttempt(record, attempt, runningNote);
  if (!begun.ok) {
    log.info('skipping job: its task cannot start this attempt', {
      reason: begun.reason,
      ...(begun.reason === 'missing' ? {} : { status: begun.current }),
      ...(begun.reason === 'stale' ? { latestAttempt: begun.attempt } : {}),
    });
    traced?.note({ 'mcp.task.skipped': begun.reason });
    return false;
  }
  // A stalled job is one whose worker died or lost its lock mid-run: running it again is what retrySafe allows.
  // (A retry after an error the tool threw is its retry policy's business; a job held back by a cap never ran.)
  // A job that left an upstream task to follow is not run again but resumed (docs/gateway.md): the tool decides.
  if (job.stalledCounter > 0 && !mayRunAgain(tool, job)) {
    await settle(deps, record, interruptedSettlement(tool.name), log, attempt, traced);
    return false;
  }

  const controller = running.start(taskId);
  const context = createToolContext(deps, record, job, controller.signal, log, traced?.context);
  attachResumePoint(context, job, log);
  const note =
    attempt <= 1
      ? deps.runningNotes.add(() => {
          // Only while the task is plainly working: a tool waiting for its client keeps that status message.
          deps.store.note(record, TaskStatus.Working, runningNote, { attempt }).catch((error: unknown) => {
            log.warn('could not note the task as running', { error: String(error) });
          });
        })
      : undefined;
  const timeoutMs = scheduling?.timeoutMs;
  const timer =
    timeoutMs !== undefined
      ? setTimeout(() => {
          if (!controller.signal.aborted) controller.abort(AbortReason.Timeout);
        }, timeoutMs)
      : undefined;
  let settlement: Settlement | undefined;
  let failure: { error: unknown } | undefined;
  try {
    const args = tools.parseArguments(tool, job.data.arguments);
    const result = checkToolResult(await tool.run(args, context));
    settlement = result.success
      ? settleWithResult(result.data)
      : settleWithError(
          tool.name,
          new Error(`it returned an invalid CallToolResult (${describeIssues(result.error)})`),
        );
  } catch (error) {
    failure = { error };
  } finally {
    if (note) deps.runningNotes.cancel(note);
    clearTimeout(timer);
    running.finish(taskId, controller);
  }
  const reason = controller.signal.aborted ? (controller.signal.reason as AbortReason) : undefined;
  if (reason === AbortReason.Timeout) {
    // Whatever the tool did after its signal fired, the run took too long.
    failure = { error: new RunTimeoutError(timeoutMs ?? 0) };
    deps.count?.(tool.name, 'timeouts');
  } else if (failure) {
    if (reason === AbortReason.Shutdown && token) {
      // An upstream task stored on the job runs on without us: the next attempt follows it.
      if (!mayRunAgain(tool, job)) {
        await settle(deps, record, interruptedSettlement(tool.name), log, attempt, traced);
        return false;
      }
      // Hand the job back without spending an attempt: another worker picks it up.
      log.info('handing the task back on shutdown');
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    if (reason === AbortReason.LockLost) {
      // No settlement: the job's next attempt (stalled-job recovery) runs the tool again and settles the task.
      log.warn('tool stopped: this worker lost the job lock, so the task is left to the next attempt', { reason });
      traced?.note({ 'mcp.task.stopped': String(reason) });
      return true;
    }
    if (reason !== undefined) {
      log.info('tool stopped', { reason });
      traced?.note({ 'mcp.task.stopped': String(reason) });
      return false;
    }
  }
  if (failure) {
    const run = job.attemptsMade + 1;
    const verdict = afterFailedRun(scheduling, run, job.opts.attempts ?? 1, failure.error);
    if (verdict.retry && token) {
      // The task stays working and says why and when the next run starts; BullMQ delays the job (backoffStrategy).
      const noted = await store.note(record, TaskStatus.Working, verdict.statusMessage, { attempt });
      if (!noted.ok) return false;
      deps.count?.(tool.name, 'retries');
      log.info('run failed: retrying', { run, delayMs: verdict.delayMs, error: String(failure.error) });
      traced?.note({ 'mcp.task.retry': run });
      throw new RetryLater(verdict.statusMessage, verdict.delayMs);
    }
    const failed = settleWithError(tool.name, failure.error);
    settlement = verdict.statusMessage !== undefined ? { ...failed, statusMessage: verdict.statusMessage } : failed;
  }
  if (settlement) await settle(deps, record, settlement, log, attempt, traced);
  return false;
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

async function settle(
  deps: JobDeps,
  task: TaskRecord,
  settlement: Settlement,
  log: Logger,
  attempt?: number,
  traced?: JobTrace,
): Promise<void> {
  const options = attempt === undefined ? {} : { attempt };
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
  }
  // Cancelled (or expired) first: that status stands (T-CANCEL-3) and this outcome is dropped. Or a later attempt
  // runs the task now (this worker lost the job's lock): that attempt settles it.
  else
    log.info('task outcome dropped', {
      reason: moved.reason,
      ...(moved.reason === 'missing' ? {} : { current: moved.current }),
      ...(moved.reason === 'stale' ? { latestAttempt: moved.attempt } : {}),
    });
}

/**
 * Whether a job cut off mid-run (its worker died, lost the lock or shut down) may start its tool again: retrySafe
 * allows it, and a job that left an upstream task to follow is resumed rather than run again (docs/gateway.md).
 */
function mayRunAgain(tool: ToolDefinition, job: Job<ToolJobData>): boolean {
  return tool.retrySafe !== false || resumableUpstreamTask(job) !== undefined;
}
