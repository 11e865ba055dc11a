// Runs one tool job: checks the task is still wanted and the tool known, holds the job back under a per-principal
// cap, runs the tool (run-tool.ts, or external-job.ts for an external tool), and acts on what the attempt came to in
// one place (concludeRun). The task record, not BullMQ's job, carries the outcome.
import { DelayedError, type Job } from 'bullmq';
import type { RunClaim, ToolJobData } from '@mcp-tasks/engine';
import {
  ErrorCode,
  isExternalTool,
  isTerminal,
  ProtocolError,
  type Scheduling,
  type ToolDefinition,
} from '@mcp-tasks/protocol';
import type { Attempt, AttemptDeps, FencedAttempt, JobDeps } from './attempt.ts';
import { concludeRun, reportSkip } from './conclude-run.ts';
import { DelayedCalls } from './delayed-calls.ts';
import { runExternalJob } from './external-job.ts';
import { startJobTrace, type JobTrace } from './job-trace.ts';
import type { RunOutcome } from './run-outcome.ts';
import { runTool } from './run-tool.ts';
import { queuedBehindMessage } from './scheduling.ts';

export type { JobDeps } from './attempt.ts';

/** A job held back by a per-principal cap goes back to the queue after this long, if nothing starts it earlier. */
export const PARK_MS = 60_000;

/**
 * The BullMQ processor. It declares two parameters, so BullMQ makes no AbortController of its own per job: a run's
 * signal is the one RunningTasks gives it (RunningTasks.start says why).
 */
export function toolProcessor(jobDeps: JobDeps) {
  const deps: AttemptDeps = {
    ...jobDeps,
    runningNotes: new DelayedCalls(jobDeps.runningNoteAfterMs),
    runningNote: `Running on ${jobDeps.workerName}.`,
  };
  return (job: Job<ToolJobData>, token?: string) => processJob(deps, job, token);
}

async function processJob(deps: AttemptDeps, job: Job<ToolJobData>, token: string | undefined): Promise<void> {
  const traced = await startJobTrace(job, {
    workerName: deps.workerName,
    store: deps.store,
    knownTool: (name) => servedTool(deps, name) !== undefined,
  });
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
  deps: AttemptDeps,
  job: Job<ToolJobData>,
  token: string | undefined,
  traced: JobTrace | undefined,
): Promise<void> {
  const { taskId, tool: toolName } = job.data;
  const record = await deps.store.get(taskId);
  if (!record) return reportSkip(deps.log, job, traced, { reason: 'gone' });
  // BullMQ counts the starts of a job, so a later attempt has a higher number: it fences this one's moves.
  const fence = job.attemptsStarted;
  // One child logger per job (its fields are merged into each line it writes).
  const log = deps.log.child({ taskId, tool: toolName, jobAttempt: fence, owner: record.owner });
  const attempt: FencedAttempt = { job, token, traced, record, log, fence };
  if (isTerminal(record.status)) {
    return concludeRun(deps, attempt, { kind: 'skipped', skip: { reason: 'terminal', status: record.status } });
  }
  const tool = servedTool(deps, toolName);
  if (!tool) {
    const error = new ProtocolError(ErrorCode.MethodNotFound, `This worker has no tool '${toolName}'`);
    return concludeRun(deps, attempt, { kind: 'failed', error });
  }
  if (isExternalTool(tool)) {
    // Submission is idempotent per task id and re-runs of a poll are the design, so retrySafe does not apply; nor
    // does the attempt fence: every poll is a new attempt, and the external system has one outcome to report.
    const unfenced: Attempt = { ...attempt, fence: undefined };
    return concludeRun(deps, unfenced, await runExternalJob(deps, job, record, tool, log));
  }
  const scheduling = deps.scheduling?.(tool.name);
  const admission = await admit(deps, attempt, tool.name, scheduling);
  if (admission.kind === 'held') return concludeRun(deps, attempt, admission);
  let outcome: RunOutcome | undefined;
  try {
    outcome = await runTool(deps, attempt, tool, scheduling);
    await concludeRun(deps, attempt, outcome);
  } finally {
    // After the conclusion: ending the lease starts the principal's next parked job.
    if (admission.kind === 'admitted') await endRun(deps, attempt, admission.claim, outcome?.kind === 'lockLost');
  }
}

function servedTool(deps: AttemptDeps, name: string): ToolDefinition | undefined {
  try {
    return deps.tools.get(name);
  } catch {
    return undefined;
  }
}

type Admission = Extract<RunOutcome, { kind: 'held' }> | { kind: 'admitted'; claim: RunClaim } | { kind: 'uncapped' };
const UNCAPPED: Admission = { kind: 'uncapped' };

/** Admits the run under its principal's caps (docs/scheduling.md), or holds the job back while they are full. */
async function admit(
  deps: AttemptDeps,
  attempt: FencedAttempt,
  tool: string,
  scheduling: Scheduling | undefined,
): Promise<Admission> {
  const { caps } = deps;
  const toolCap = scheduling?.maxRunningPerOwner;
  if (!caps || !attempt.token || !caps.owner.applies(toolCap)) return UNCAPPED;
  const { record, job } = attempt;
  const admission = await caps.owner.admit(record.owner, tool, job.queueName, record.taskId, toolCap);
  if (!admission.admitted) {
    // Parked until one of the principal's runs ends (OwnerCaps): the slot goes to other principals meanwhile.
    const statusMessage = queuedBehindMessage(admission, { all: caps.maxRunningPerOwner, tool: toolCap }, tool);
    return { kind: 'held', statusMessage, admission, parkMs: caps.parkMs };
  }
  caps.held.add(record.taskId, admission.claim);
  return { kind: 'admitted', claim: admission.claim };
}

/** Ends the run's lease, or keeps it when another attempt of the job holds the task now (the lock was lost). */
async function endRun(deps: AttemptDeps, attempt: Attempt, claim: RunClaim, keep: boolean): Promise<void> {
  const held = deps.caps?.held;
  if (!held) return;
  if (keep) held.forget(attempt.record.taskId, claim);
  else
    await held
      .release(attempt.record.taskId, claim)
      .catch((error: unknown) => attempt.log.warn('run lease not released', { error: String(error) }));
}
