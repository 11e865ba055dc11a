// One run of a tool this worker serves itself: fences off earlier attempts of the job, runs the tool with its
// context, its timeout and the "Running on <worker>." note, and says what came of it (RunOutcome) without settling.
import type { Job } from 'bullmq';
import type { ToolJobData } from '@mcp-tasks/engine';
import { describeIssues, TaskStatus, type Scheduling, type ToolDefinition } from '@mcp-tasks/protocol';
import { attemptRun, type Attempt, type AttemptDeps, type FencedAttempt } from './attempt.ts';
import { childCaller } from './child-calls.ts';
import { DurableRun } from './durable-run.ts';
import { AttemptWaits, type Parking } from './durable-waits.ts';
import { attachResumePoint, resumableUpstreamTask } from './resume-point.ts';
import { HANDED_BACK, INTERRUPTED, LOCK_LOST, type RunOutcome } from './run-outcome.ts';
import { AbortReason } from './running-tasks.ts';
import { afterFailedRun, RunTimeoutError } from './scheduling.ts';
import { createToolContext } from './tool-context.ts';
import { checkToolResult, type ToolResultCheck } from './tool-result.ts';
import { attemptWaits } from './wait-budget.ts';
import { attachCallOrigin } from './upstream/lanes.ts';

/** How the tool's run ended: what it returned (checked), or what it threw, and why its signal fired if it did. */
export interface ToolRun {
  /** Undefined when the tool threw. */
  readonly returned: ToolResultCheck | undefined;
  readonly thrown: unknown;
  readonly aborted: AbortReason | undefined;
  /** The task has started child tasks (ctx.callTool), in this run or an earlier one. */
  readonly children?: boolean;
  /** The tool parked on a wait (durable-waits.ts): the attempt ends, and its job waits in the delayed set. */
  readonly parked?: Parking;
}

export async function runTool(
  deps: AttemptDeps,
  attempt: FencedAttempt,
  tool: ToolDefinition,
  scheduling: Scheduling | undefined,
): Promise<RunOutcome> {
  // A first attempt has no earlier attempt to fence off and no requests of one to withdraw: its moves carry its
  // number, which a later attempt's start outdates. It is only noted as running, and only if it still runs after
  // a short while: most tools end before, and the note would cost them a transition (a round trip, a history
  // entry, a stream event and two publishes).
  // Whether the task keeps durable state (docs/durable-execution.md): a first attempt knows from the record it read
  // (nothing ran before it), a later one from the step that starts it, after which no earlier attempt can add any.
  let kept = attempt.record.durable !== undefined;
  if (attempt.fence > 1) {
    // From here on an earlier attempt (a worker that died, or lost the job's lock and runs on) can no longer move
    // the task, and the input requests it left waiting are withdrawn (T-INPUT-4).
    const begun = await deps.inputs.beginAttempt(
      attempt.record,
      attempt.fence,
      deps.runningNote,
      attemptRun(attempt, deps.workerName),
    );
    if (!begun.ok) return { kind: 'skipped', skip: { reason: 'refused', refusal: begun } };
    kept = begun.durable === true;
  }
  // A stalled job is one whose worker died or lost its lock mid-run: running it again is what retrySafe allows.
  // (A retry after an error the tool threw is its retry policy's business; a job held back by a cap never ran.)
  // A job that left an upstream task to follow is not run again but resumed (docs/gateway.md): the tool decides.
  if (attempt.job.stalledCounter > 0 && !mayRunAgain(tool, attempt.job)) {
    return (attempt.record.durable?.children ?? 0) > 0 ? { kind: 'interrupted', endsChildren: true } : INTERRUPTED;
  }
  // Woken from a wait: the record no longer says the task waits (the wait itself is replayed from the durable hash).
  if (attempt.record.wait) await deps.store.waits.resume(attempt.record);
  const durable = await DurableRun.open(deps.store, attempt.record, attempt.fence, deps.durable, kept);
  return outcomeOf(await execute(deps, attempt, tool, scheduling?.timeoutMs, durable), attempt, tool, scheduling);
}

/** What a finished run of the tool comes to. */
export function outcomeOf(
  run: ToolRun,
  attempt: Pick<Attempt, 'job' | 'token'>,
  tool: ToolDefinition,
  scheduling: Scheduling | undefined,
): RunOutcome {
  if (run.parked) return { kind: 'parked', parking: run.parked };
  const outcome = runOutcome(run, attempt, tool, scheduling);
  // A task that ends has no use for the children still running (a retry keeps them: it waits for the same ones).
  if (run.children !== true) return outcome;
  if (outcome.kind === 'completed' || outcome.kind === 'failed') return { ...outcome, endsChildren: true };
  return outcome;
}

function runOutcome(
  run: ToolRun,
  attempt: Pick<Attempt, 'job' | 'token'>,
  tool: ToolDefinition,
  scheduling: Scheduling | undefined,
): RunOutcome {
  // Whatever the tool did after its signal fired, the run took too long.
  if (run.aborted === AbortReason.Timeout) {
    return failedRun(attempt, scheduling, new RunTimeoutError(scheduling?.timeoutMs ?? 0));
  }
  if (run.returned === undefined) return afterThrow(attempt, tool, scheduling, run.thrown, run.aborted);
  // A result that came after a cancel is settled all the same: the cancelled status stands (TaskStore refuses).
  if (run.returned.success) return { kind: 'completed', result: run.returned.data };
  const invalid = `it returned an invalid CallToolResult (${describeIssues(run.returned.error)})`;
  return { kind: 'failed', error: new Error(invalid) };
}

async function execute(
  deps: AttemptDeps,
  attempt: FencedAttempt,
  tool: ToolDefinition,
  timeoutMs: number | undefined,
  durable: DurableRun,
): Promise<ToolRun> {
  const { job, record, log, fence } = attempt;
  const controller = deps.running.start(record.taskId);
  // The attempt's waits (for its client, for its children) lend its one slot, however many run at once.
  const waits = attemptWaits(deps.waitBudget);
  const trace = attempt.traced?.context;
  const callTool = childCaller(deps.children, {
    run: durable,
    parent: record,
    signal: controller.signal,
    waits,
    log,
    trace,
  });
  const parking = new AttemptWaits(
    { ...deps.durableWaits, store: deps.store, inputs: deps.inputs, inputTimeoutMs: deps.input.timeoutMs },
    durable,
    record,
    controller.signal,
  );
  const context = createToolContext({ ...deps, waitBudget: waits }, record, job, controller.signal, log, trace, {
    checkpoint: (value) => durable.checkpoint(value),
    lastCheckpoint: durable.lastCheckpoint,
    step: (name, fn, options) =>
      options?.retry === undefined
        ? durable.step(name, fn)
        : durable.step(name, () => parking.retried(name, fn, options.retry)),
    callTool,
    sleep: (ms, options) => parking.sleep(ms, options?.key),
    sleepUntil: (at, options) => parking.sleepUntil(at, options?.key),
    waitForEvent: (name, options) => parking.waitForEvent(name, options),
    signalTask: (taskId, name, data) => parking.signalTask(taskId, name, data),
    askParked: (method, params, key) => parking.askParked(method, params, key),
  });
  attachResumePoint(context, job, log);
  attachCallOrigin(context, record, deps.sessions);
  const note =
    fence <= 1
      ? deps.runningNotes.add(() => {
          // Only while the task is plainly working: a tool waiting for its client keeps that status message.
          const run = attemptRun(attempt, deps.workerName);
          deps.store
            .note(record, TaskStatus.Working, deps.runningNote, { attempt: fence, run })
            .catch((error: unknown) => {
              log.warn('could not note the task as running', { error: String(error) });
            });
        })
      : undefined;
  const timer =
    timeoutMs !== undefined
      ? setTimeout(() => {
          if (!controller.signal.aborted) controller.abort(AbortReason.Timeout);
        }, timeoutMs)
      : undefined;
  let returned: ToolResultCheck | undefined;
  let thrown: unknown;
  let parked: Parking | undefined;
  try {
    const args = deps.tools.parseArguments(tool, job.data.arguments);
    // A wait that parks ends the attempt while the tool's promise stays pending (it never settles: durable-waits.ts).
    const ran = await Promise.race([
      // A tool written in plain JavaScript may return its result rather than a promise of it.
      Promise.resolve(tool.run(args, context)).then((value) => ({ value })),
      parking.parked.then((parking) => ({ parking })),
    ]);
    if ('parking' in ran) {
      parked = ran.parking;
      // Work the tool does beside the wait stops: the attempt is over (AbortReason.Parked is no failure).
      controller.abort(AbortReason.Parked);
    } else returned = checkToolResult(ran.value);
  } catch (error) {
    thrown = error;
  } finally {
    if (note) deps.runningNotes.cancel(note);
    clearTimeout(timer);
    deps.running.finish(record.taskId, controller);
  }
  if (parked) return { returned: undefined, thrown: undefined, aborted: undefined, parked };
  const aborted = controller.signal.aborted ? (controller.signal.reason as AbortReason) : undefined;
  return { returned, thrown, aborted, ...(durable.hasChildren ? { children: true } : {}) };
}

/** What a tool that threw comes to: a failed run, unless its signal stopped it. */
function afterThrow(
  attempt: Pick<Attempt, 'job' | 'token'>,
  tool: ToolDefinition,
  scheduling: Scheduling | undefined,
  thrown: unknown,
  aborted: Exclude<AbortReason, 'timeout'> | undefined,
): RunOutcome {
  if (aborted === undefined) return failedRun(attempt, scheduling, thrown);
  if (aborted === AbortReason.Shutdown && attempt.token) {
    // An upstream task stored on the job runs on without us: the next attempt follows it.
    return mayRunAgain(tool, attempt.job) ? HANDED_BACK : INTERRUPTED;
  }
  if (aborted === AbortReason.LockLost) return LOCK_LOST;
  return { kind: 'stopped', reason: aborted };
}

/** Another run after the tool's backoff, or the task's failure (the retry policy's verdict, afterFailedRun). */
function failedRun(
  attempt: Pick<Attempt, 'job' | 'token'>,
  scheduling: Scheduling | undefined,
  error: unknown,
): RunOutcome {
  const { job } = attempt;
  const run = job.attemptsMade + 1;
  const verdict = afterFailedRun(scheduling, run, job.opts.attempts ?? 1, error);
  if (verdict.retry && attempt.token) {
    return { kind: 'retryLater', error, run, delayMs: verdict.delayMs, statusMessage: verdict.statusMessage };
  }
  return { kind: 'failed', error, statusMessage: verdict.statusMessage };
}

/**
 * Whether a job cut off mid-run (its worker died, lost the lock or shut down) may start its tool again: retrySafe
 * allows it, and a job that left an upstream task to follow is resumed rather than run again (docs/gateway.md).
 */
function mayRunAgain(tool: ToolDefinition, job: Job<ToolJobData>): boolean {
  return tool.retrySafe !== false || resumableUpstreamTask(job) !== undefined;
}
