// The handle tools (status, result, cancel, answer), whichever wire asks (docs/clients.md; who gets task handles and
// when a call is handed out: handle-policy.ts). A handle is the id of the plain call's own record, made a task
// when it is handed out (PlainCalls.handOut), so the handle tools are the task use cases of tasks.ts and inputs.ts
// (the same owner checks, the same not-found for unknown, expired and foreign ids) answered as tool results. The api
// answers them itself: no job runs for them.
import { audit, AuditEvent } from '@mcp-tasks/engine';
import {
  HandleTool,
  isTerminal,
  TaskStatus,
  type HandleToolArguments,
  type HandleView,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { ensureOpened } from './admission.ts';
import { awaitTask } from './await-task.ts';
import { answerTaskInputs, outstandingInputs } from './inputs.ts';
import type { CallContext, CallRequest } from './request.ts';
import { cancelTask, findTask } from './tasks.ts';

/**
 * What a handle tool answers: the task as it is now (status, cancel, answer, and a result not ready yet), or the
 * ended task whose result `tasks/result` would give (result).
 */
export type HandleOutcome = { status: HandleView } | { ended: TaskRecord };

/**
 * Runs a handle tool. An id that is unknown, expired or not the caller's is the TaskNotFoundError the task methods
 * give (-32602), which the wire counts against the caller's failed-lookup budget (admission.ts). `signal` stops the
 * result's wait.
 */
export async function runHandleTool(
  context: CallContext,
  call: HandleToolArguments,
  request: Pick<CallRequest, 'opening'>,
  signal: AbortSignal,
): Promise<HandleOutcome> {
  // A tools/call leaves its opening to the create script (rev2025-11-25/post.ts): a handle tool has none, and opens
  // the request before anything is read.
  await ensureOpened(request.opening);
  switch (call.tool) {
    case HandleTool.Status:
      return { status: await viewOf(context, await findTask(context, call.taskId)) };
    case HandleTool.Cancel: {
      const outcome = await cancelTask(context, call.taskId);
      return { status: await viewOf(context, 'cancelled' in outcome ? outcome.cancelled : outcome.ended) };
    }
    case HandleTool.Answer: {
      const record = await findTask(context, call.taskId);
      await answerTaskInputs(context, record, call.inputResponses);
      return { status: await viewOf(context, await findTask(context, call.taskId)) };
    }
    case HandleTool.Result:
      return awaitResult(context, call.taskId, signal);
  }
}

/**
 * task_result: the ended task, waited for up to HANDLE_AFTER_MS (the one wait, await-task.ts, as tasks/result's but
 * bounded so that the client's own request timeout never cuts it); a task still running then is answered with its
 * status.
 */
async function awaitResult(context: CallContext, taskId: string, signal: AbortSignal): Promise<HandleOutcome> {
  const { services } = context;
  let owner = '';
  const outcome = await awaitTask(services, taskId, {
    signal,
    first: async () => {
      const first = await findTask(context, taskId, { watch: true });
      owner = first.owner;
      return first;
    },
    read: () => services.tasks.reread(taskId, owner),
    stop: { withinMs: services.handles.settings.afterMs },
  });
  if ('waiting' in outcome) return { status: await viewOf(context, outcome.waiting) };
  if (!('ended' in outcome)) throw new Error(`task_result: unexpected end of the wait (${Object.keys(outcome)[0]})`);
  const record = outcome.ended;
  audit(services.security.audit, AuditEvent.ResultRetrieved, {
    principal: context.caller.owner,
    taskId: record.taskId,
    tool: record.tool,
    requestId: context.caller.requestId,
    ...(context.caller.sessionId !== undefined ? { sessionId: context.caller.sessionId } : {}),
    status: record.status,
  });
  return { ended: record };
}

/** The task with what its status carries: the tool's last progress while it runs, what it asks while it waits. */
export async function viewOf(context: Pick<CallContext, 'services'>, record: TaskRecord): Promise<HandleView> {
  const { services } = context;
  if (isTerminal(record.status)) return { record };
  const [progress, inputs] = await Promise.all([
    services.tasks.progressOf(record).catch(() => undefined),
    record.status === TaskStatus.InputRequired ? outstandingInputs(services, record) : undefined,
  ]);
  return {
    record,
    ...(progress !== undefined ? { progress } : {}),
    ...(inputs !== undefined ? { inputs } : {}),
  };
}
