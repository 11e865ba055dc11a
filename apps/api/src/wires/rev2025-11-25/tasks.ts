// tasks/get, tasks/result, tasks/list, tasks/cancel on the 2025-11-25 wire. The `taskId` param is the only source
// of truth for which task is meant; a related-task `_meta` on these requests is ignored (T-META-2).
import { audit, AuditEvent, type RequestOpening } from '@mcp-tasks/engine';
import {
  InvalidStateError,
  ListParamsSchema,
  parseParams,
  parseTaskId,
  resultOf,
  toWireTask,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { awaitTask } from '../../calls/await-task.ts';
import {
  cancelTask as cancel,
  findTask,
  findTaskSince,
  listTasks as list,
  type CancelOutcome,
} from '../../calls/tasks.ts';
import type { HandlerReply, RequestContext } from './context.ts';
import { holdingSlot } from './stream-limit.ts';
import { StreamReply } from './stream-reply.ts';
import { wireMethod } from '../method-table.ts';
import { callContextOf } from './call-context.ts';

type Ctx = RequestContext;

export const getTask = wireMethod<Ctx, string, TaskRecord, HandlerReply>('tasks/get', {
  parse: (params) => parseTaskId(params, 'tasks/get'),
  // The read opens the request in its step when the session gate left that to it (RequestOpening): one round trip.
  run: (taskId, context) => findTask(callContextOf(context), taskId, openingOf(context)),
  render: (record) => ({ ...toWireTask(record) }),
});

export const listTasks = wireMethod<Ctx, string | undefined, Awaited<ReturnType<typeof list>>, HandlerReply>(
  'tasks/list',
  {
    parse: (params) => parseParams(ListParamsSchema, params, 'tasks/list').cursor,
    run: (cursor, context) => list(callContextOf(context), cursor),
    render: (page) => ({
      tasks: page.tasks.map(toWireTask),
      ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    }),
  },
);

export const cancelTask = wireMethod<Ctx, string, CancelOutcome, HandlerReply>('tasks/cancel', {
  parse: (params) => parseTaskId(params, 'tasks/cancel'),
  run: (taskId, context) => cancel(callContextOf(context), taskId, openingOf(context)),
  render: (outcome) => {
    // 2025-11-25 refuses to cancel a task that has ended (T-CANCEL-*).
    if ('ended' in outcome)
      throw new InvalidStateError(`Cannot cancel task: already in terminal status '${outcome.status}'`, outcome.status);
    return { ...toWireTask(outcome.cancelled) };
  },
});

/** The request's opening, when the session gate left it to the method's first script (RequestOpening). */
function openingOf(context: Ctx): { opening?: RequestOpening } {
  return context.opening ? { opening: context.opening.opening } : {};
}

/** The task when it has ended, or the stream its answer goes out on. */
type ResultOutcome = { ended: TaskRecord } | { stream: StreamReply };

export const getTaskResult = wireMethod<Ctx, string, ResultOutcome, HandlerReply>('tasks/result', {
  parse: (params) => parseTaskId(params, 'tasks/result'),
  run: awaitResult,
  render: (outcome, context) => {
    if ('stream' in outcome) return outcome.stream;
    const record = outcome.ended;
    const { services, session } = context;
    // Debug: the audit record below says the same at info (T-AUDIT-1); log lines are a measurable share of a
    // task's cost (docs/benchmarks.md), so their fields are not even built unless wanted.
    if (services.log.isDebugEnabled())
      context.log.debug('task result retrieved', {
        taskId: record.taskId,
        tool: record.tool,
        status: record.status,
        owner: session.owner,
      });
    audit(services.security.audit, AuditEvent.ResultRetrieved, {
      principal: session.owner,
      taskId: record.taskId,
      tool: record.tool,
      requestId: context.requestId,
      sessionId: session.sessionId,
      status: record.status,
    });
    return resultOf(record);
  },
});

/**
 * Waits for the task's end (T-RES-2), through the one wait (calls/await-task.ts): the first read checks the owner,
 * reads the record, opens the request when the transport left that to it (RequestOpening) and, for a client that
 * accepts SSE, reads where the session's event stream stands (where a stream of the answer starts), in one step. A
 * task that ends soon is answered as plain JSON: a stream costs the server and the client several times more. One
 * that does not, or that needs its client (input_required), gets the stream, which then carries the task's messages
 * from this moment on (T-INPUT-3). Without SSE the request blocks until the task ends, holding a slot as a stream would
 * (stream-limit.ts).
 */
async function awaitResult(taskId: string, context: Ctx): Promise<ResultOutcome> {
  // `signal` and `log` are read only where needed: the context makes them on first use (post.ts).
  const { services, session, canStream } = context;
  // Where the session's event stream stood as the first read read the task (an answer that streams starts there).
  let since: string | undefined;
  const outcome = await awaitTask(services, taskId, {
    get signal() {
      return context.signal;
    },
    first: async () => {
      const first = await findTaskSince(callContextOf(context), taskId, {
        watch: true,
        ...openingOf(context),
        ...(canStream ? { sinceOf: session.sessionId } : {}),
      });
      since = first.since;
      const current = first.record;
      if (services.log.isDebugEnabled())
        context.log.debug('task result requested', {
          taskId,
          tool: current.tool,
          status: current.status,
          owner: session.owner,
        });
      return current;
    },
    // The later reads: the first has checked the owner and registered this replica.
    read: () => services.tasks.reread(taskId, session.owner),
    ...(canStream
      ? {
          stream: {
            afterMs: services.config.RESULT_STREAM_AFTER_MS,
            // Read with the task by its first read (findTaskSince); a task of another of the principal's sessions
            // has its own stream, read now.
            since: (record) =>
              since !== undefined
                ? Promise.resolve(since)
                : services.events.lastId(record?.sessionId ?? session.sessionId),
          },
        }
      : { hold: (wait) => holdingSlot(context, wait) }),
  });
  if ('ended' in outcome) return { ended: outcome.ended };
  if ('stream' in outcome) return { stream: new StreamReply(outcome.stream, outcome.since) };
  throw new Error(`tasks/result: unexpected end of the wait (${Object.keys(outcome).join()})`);
}
