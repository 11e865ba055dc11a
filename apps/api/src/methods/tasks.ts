// tasks/get, tasks/result, tasks/list, tasks/cancel. The `taskId` param is the only source of truth for which
// task is meant; a related-task `_meta` on these requests is ignored (T-META-2).
import { audit, AuditEvent } from '@mcp-tasks/engine';
import { ListParamsSchema, parseParams, resultOf, TaskIdParamsSchema, toWireTask } from '@mcp-tasks/protocol';
import { StreamReply, type MethodHandler } from '../context.ts';

export const getTask: MethodHandler = async (params, { services, session }) => {
  const { taskId } = parseParams(TaskIdParamsSchema, params, 'tasks/get');
  const record = await services.tasks.getOwned(taskId, session.owner);
  return { ...toWireTask(record) };
};

export const getTaskResult: MethodHandler = async (
  params,
  { services, session, signal, canStream, log, requestId },
) => {
  const { taskId } = parseParams(TaskIdParamsSchema, params, 'tasks/result');
  const current = await services.tasks.getOwned(taskId, session.owner);
  log.debug('task result requested', { taskId, tool: current.tool, status: current.status, owner: session.owner });
  // With SSE the answer stream also carries the task's input requests and notifications (T-INPUT-3).
  if (canStream && !services.tasks.isTerminal(current)) return new StreamReply(current);
  // Already terminal (say, a client that polled tasks/get first): this read is the answer, nothing to wait for.
  const record = services.tasks.isTerminal(current)
    ? current
    : await services.tasks.waitForTerminal(taskId, signal, () => services.tasks.getOwned(taskId, session.owner));
  // Debug, as "requested" above: the audit record below says the same at info (T-AUDIT-1); log lines are a
  // measurable share of a task's cost (docs/benchmarks.md).
  log.debug('task result retrieved', { taskId, tool: record.tool, status: record.status, owner: session.owner });
  audit(services.security.audit, AuditEvent.ResultRetrieved, {
    principal: session.owner,
    taskId,
    tool: record.tool,
    requestId,
    sessionId: session.sessionId,
    status: record.status,
  });
  return resultOf(record);
};

export const listTasks: MethodHandler = async (params, { services, session }) => {
  const { cursor } = parseParams(ListParamsSchema, params, 'tasks/list');
  const page = await services.store.list(session.owner, cursor, services.config.LIST_PAGE_SIZE);
  return {
    tasks: page.tasks.map(toWireTask),
    ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
  };
};

export const cancelTask: MethodHandler = async (params, { services, session, log }) => {
  const { taskId } = parseParams(TaskIdParamsSchema, params, 'tasks/cancel');
  const record = await services.tasks.getOwned(taskId, session.owner);
  const cancelled = await services.tasks.cancel(record);
  log.info('task cancelled', { taskId, tool: record.tool, owner: session.owner });
  return { ...toWireTask(cancelled) };
};
