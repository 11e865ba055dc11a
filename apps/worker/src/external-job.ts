// Runs the worker's part of an external tool (docs/external-tools.md): submit the work once, record where it runs,
// then either give the job up (callback: the api settles the task when the external system reports) or poll its
// status from a delayed job, so that no worker slot is held between polls.
import type { Job } from 'bullmq';
import { callbackUrl, forwardCancel, signCallbackToken, type ExternalTasks, type ToolJobData } from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';
import {
  CallToolResultSchema,
  describeIssues,
  expiresAt,
  TaskStatus,
  type ExternalContext,
  type ExternalRef,
  type ExternalToolDefinition,
  type TaskRecord,
  type ToolRegistry,
} from '@mcp-tasks/protocol';
import { NO_SETTLEMENT, type RunOutcome } from './run-outcome.ts';
import type { RunningTasks } from './running-tasks.ts';

export interface ExternalDeps {
  tasks: ExternalTasks;
  /** Callback URL base and token secret; absent: external tools can only be polled. */
  callback: { baseUrl: string; secret: string } | undefined;
  pollMinMs: number;
  pollMaxMs: number;
}

interface RunDeps {
  tools: Pick<ToolRegistry, 'parseArguments'>;
  running: RunningTasks;
  external?: ExternalDeps;
  store: { note(task: TaskRecord, status: TaskStatus, statusMessage: string): Promise<unknown> };
}

/**
 * What this run of the job comes to: the external work's result or failure (or why it could not start), another
 * poll later, or nothing to settle now (waiting for a callback, or the task was cancelled meanwhile).
 */
export async function runExternalJob(
  deps: RunDeps,
  job: Job<ToolJobData>,
  record: TaskRecord,
  tool: ExternalToolDefinition,
  log: Logger,
): Promise<RunOutcome> {
  const ext = deps.external;
  if (!ext) return { kind: 'failed', error: new Error('this worker is not set up to run external tools') };
  const controller = deps.running.start(record.taskId);
  const context: ExternalContext = {
    taskId: record.taskId,
    signal: controller.signal,
    log,
    ...(ext.callback
      ? {
          callback: {
            url: callbackUrl(ext.callback.baseUrl, record.taskId),
            token: signCallbackToken(ext.callback.secret, record.taskId, expiresAt(record)),
          },
        }
      : {}),
  };
  try {
    let ref = record.external;
    if (!ref) {
      let submission;
      try {
        submission = await tool.external.submit(deps.tools.parseArguments(tool, job.data.arguments), context);
      } catch (error) {
        if (controller.signal.aborted) return NO_SETTLEMENT;
        return { kind: 'failed', error };
      }
      if (submission.mode === 'poll' && (!submission.statusUrl || !tool.external.poll)) {
        return { kind: 'failed', error: new Error('it asked to be polled but gave no statusUrl or has no poll()') };
      }
      ref = {
        mode: submission.mode,
        externalId: submission.externalId,
        submittedAt: Date.now(),
        ...(submission.statusUrl ? { statusUrl: submission.statusUrl } : {}),
        ...(submission.cancelUrl ? { cancelUrl: submission.cancelUrl } : {}),
      };
      const marked = await ext.tasks.mark(record, ref);
      if (!marked.ok) {
        // Cancelled (or expired) while submitting: the api's cancel could not know where to forward it.
        if (marked.status === undefined || marked.status === TaskStatus.Cancelled) await forwardCancel(ref);
        log.info('external work submitted for a task that ended meanwhile', { status: marked.status });
        return NO_SETTLEMENT;
      }
      const waiting =
        submission.mode === 'callback'
          ? `Submitted to the external system as ${submission.externalId}; waiting for its report.`
          : `Submitted to the external system as ${submission.externalId}; polling its status.`;
      await deps.store.note(record, TaskStatus.Working, submission.statusMessage ?? waiting).catch(() => undefined);
      log.info('external work submitted', { externalId: submission.externalId, mode: submission.mode });
      if (ref.mode === 'callback') return NO_SETTLEMENT;
      return pollLater(ext, ref);
    }
    // A re-run after a crash right after marking a callback task: the external system reports to the api.
    if (ref.mode !== 'poll' || !tool.external.poll) return NO_SETTLEMENT;
    let status;
    try {
      status = await tool.external.poll(ref, context);
    } catch (error) {
      if (controller.signal.aborted) return NO_SETTLEMENT;
      throw error;
    }
    switch (status.state) {
      case 'running': {
        if (status.progress !== undefined || status.message) {
          await ext.tasks.progress(record, {
            progress: status.progress ?? 0,
            ...(status.total !== undefined ? { total: status.total } : {}),
            ...(status.message ? { message: status.message } : {}),
          });
        }
        return pollLater(ext, ref);
      }
      case 'completed': {
        const result = CallToolResultSchema.safeParse(status.result);
        if (result.success) return { kind: 'completed', result: result.data };
        return {
          kind: 'failed',
          error: new Error(`it reported an invalid CallToolResult (${describeIssues(result.error)})`),
        };
      }
      case 'failed':
        // As settleWithExternalFailure renders it (the api's callback does the same).
        return { kind: 'failed', error: new Error(status.message) };
    }
  } finally {
    deps.running.finish(record.taskId, controller);
  }
}

/** Gives the slot back until the next poll; the wait grows with the time since submission (min..max). */
function pollLater(ext: ExternalDeps, ref: ExternalRef): RunOutcome {
  const elapsed = Date.now() - (ref.submittedAt ?? Date.now());
  return { kind: 'pollLater', delayMs: Math.min(ext.pollMaxMs, Math.max(ext.pollMinMs, Math.round(elapsed / 2))) };
}
