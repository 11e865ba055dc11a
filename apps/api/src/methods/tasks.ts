// tasks/get, tasks/result, tasks/list, tasks/cancel. The `taskId` param is the only source of truth for which
// task is meant; a related-task `_meta` on these requests is ignored (T-META-2).
import { ListParamsSchema, parseParams, resultOf, TaskIdParamsSchema, toWireTask } from '@mcp-tasks/protocol';
import type { MethodHandler } from '../context.ts';

export const getTask: MethodHandler = async (params, { services, session }) => {
  const { taskId } = parseParams(TaskIdParamsSchema, params, 'tasks/get');
  const record = await services.tasks.getOwned(taskId, session.owner);
  return { ...toWireTask(record) };
};

export const getTaskResult: MethodHandler = async (params, { services, session, signal, log }) => {
  const { taskId } = parseParams(TaskIdParamsSchema, params, 'tasks/result');
  await services.tasks.getOwned(taskId, session.owner);
  const record = await services.tasks.waitForTerminal(taskId, signal, () =>
    services.tasks.getOwned(taskId, session.owner),
  );
  log.info('task result retrieved', { taskId, status: record.status, owner: session.owner });
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
  log.info('task cancelled', { taskId, owner: session.owner });
  return { ...toWireTask(cancelled) };
};
