// tasks/get, tasks/result, tasks/list, tasks/cancel. The `taskId` param is the only source of truth for which
// task is meant; a related-task `_meta` on these requests is ignored (T-META-2).
import { audit, AuditEvent } from '@mcp-tasks/engine';
import { ListParamsSchema, parseParams, resultOf, parseTaskId, toWireTask, type TaskRecord } from '@mcp-tasks/protocol';
import type { MethodHandler } from '../context.ts';
import { holdingSlot } from '../stream-limit.ts';
import { StreamReply } from '../stream-reply.ts';

export const getTask: MethodHandler = async (params, { services, session }) => {
  const taskId = parseTaskId(params, 'tasks/get');
  const record = await services.tasks.getOwned(taskId, session.owner);
  return { ...toWireTask(record) };
};

export const getTaskResult: MethodHandler = async (params, context) => {
  // `signal` and `log` are read only where needed: the context makes them on first use (transport/post.ts).
  const { services, session, canStream, requestId, opening } = context;
  const taskId = parseTaskId(params, 'tasks/result');
  // One script checks the owner, reads the record and, when the task is unfinished, registers this replica as its
  // waiter: its changes then come on the replica's one subscription. The waiter is opened first, so that no change
  // slips between the read and the wait.
  // The waits' later reads: the first read below has checked the owner and registered this replica.
  const read = () => services.tasks.reread(taskId, session.owner);
  const waiter = await services.tasks.watch(taskId);
  let record: TaskRecord;
  try {
    // The first read also opens the request when the transport left that to it (RequestOpening).
    const current = await services.tasks.getOwned(taskId, session.owner, {
      watch: true,
      ...(opening ? { opening: opening.opening } : {}),
    });
    if (services.log.isDebugEnabled())
      context.log.debug('task result requested', {
        taskId,
        tool: current.tool,
        status: current.status,
        owner: session.owner,
      });
    record = current;
    if (!services.tasks.isTerminal(current)) {
      const first = { record: current, waiter };
      if (canStream) {
        // A task that ends soon is answered as plain JSON: a stream costs the server and the client several times
        // more. One that does not, or that needs its client (input_required), gets the stream, which then carries
        // the task's messages from this moment on (T-INPUT-3).
        // Sent now, ahead of the wait's reads on the same connection, but awaited only if the answer streams.
        const since = services.events.lastId(current.sessionId);
        since.catch(() => undefined);
        const withinMs = services.config.RESULT_STREAM_AFTER_MS;
        if (withinMs > 0)
          record = await services.tasks.waitForTerminal(taskId, context.signal, read, { withinMs }, first);
        if (!services.tasks.isTerminal(record)) return new StreamReply(record, await since);
      } else {
        // Without SSE the request blocks until the task ends: it holds a slot as a stream would (stream-limit.ts).
        record = await holdingSlot(context, () =>
          services.tasks.waitForTerminal(taskId, context.signal, read, undefined, first),
        );
      }
    }
  } finally {
    await waiter.close();
  }
  // Debug, as "requested" above: the audit record below says the same at info (T-AUDIT-1); log lines are a
  // measurable share of a task's cost (docs/benchmarks.md), so their fields are not even built unless wanted.
  if (services.log.isDebugEnabled())
    context.log.debug('task result retrieved', {
      taskId,
      tool: record.tool,
      status: record.status,
      owner: session.owner,
    });
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
  const taskId = parseTaskId(params, 'tasks/cancel');
  const record = await services.tasks.getOwned(taskId, session.owner);
  const cancelled = await services.tasks.cancel(record);
  log.info('task cancelled', { taskId, tool: record.tool, owner: session.owner });
  return { ...toWireTask(cancelled) };
};
