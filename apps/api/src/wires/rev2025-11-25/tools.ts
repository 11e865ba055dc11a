// tools/list and tools/call on the 2025-11-25 wire: the params of a call become a CallRequest (`params.task` asks
// for a task, T-TOOL-*), the use case starts it (calls/start-call.ts), and the answer is a CreateTaskResult at once
// (T-CREATE-1..3), or for a plain call its result, waited for as JSON or streamed (calls/plain-calls.ts).
import { carrierFor } from '@mcp-tasks/runtime';
import {
  handleStartedResult,
  HandleTool,
  handleStatusResult,
  parseCallToolParams,
  parseHandleArguments,
  MODEL_IMMEDIATE_RESPONSE_META_KEY,
  resultOf,
  supportsTasks,
  TaskSupportError,
  toWireTask,
  type TaskRecord,
  plainResultOf,
} from '@mcp-tasks/protocol';
import { awaitTask } from '../../calls/await-task.ts';
import { ensureOpened } from '../../calls/admission.ts';
import { runHandleTool, type HandleOutcome } from '../../calls/handles.ts';
import { idempotencyKeyOf } from '../../calls/idempotency.ts';
import { prepareCall, startCall, type PreparedCall } from '../../calls/start-call.ts';
import { webhookMetaOf } from '../../calls/webhooks.ts';
import type { CallRequest } from '../../calls/request.ts';
import type { HandlerReply, RequestContext } from './context.ts';
import { holdingSlot } from './stream-limit.ts';
import { StreamReply } from './stream-reply.ts';
import { constantMethod, wireMethod } from '../method-table.ts';
import { callContextOf } from './call-context.ts';

export const listTools = constantMethod('tools/list', (context: RequestContext): HandlerReply => {
  const { services, session } = context;
  // A session that did not negotiate Tasks gets task handles (docs/clients.md): its own listing.
  if (!services.handles.offeredToSession(session)) return { tools: services.tools.list() };
  return { tools: services.tools.listWithHandles({ names: services.handles.names, requiredTools: true }) };
});

type CallOutcome = { task: TaskRecord; tool: string } | { reply: HandlerReply };

export const callTool = wireMethod<RequestContext, CallRequest, CallOutcome, HandlerReply>('tools/call', {
  parse: (params, { session, opening, trace, headers, services }) => {
    const call = parseCallToolParams(params);
    const idempotencyKey = idempotencyKeyOf(headers, call._meta, services.config.IDEMPOTENCY_KEY_MAX_LENGTH);
    // A session on a revision without Tasks never saw our tasks capability: its `task` is ignored (T-TOOL-5).
    const asTask = call.task !== undefined && supportsTasks(session.protocolVersion);
    const progressToken = call._meta?.progressToken;
    return {
      client: { kind: 'session', id: session.sessionId },
      tool: call.name,
      arguments: call.arguments,
      execution: asTask ? 'task' : 'plain',
      ...(services.handles.offeredToSession(session) ? { handles: { requiredTools: true } } : {}),
      ...(call.task?.ttl !== undefined ? { requestedTtl: call.task.ttl } : {}),
      ...(progressToken !== undefined ? { progressToken } : {}),
      ...(trace ? { trace: carrierFor(trace) } : {}),
      ...(opening ? { opening: opening.opening } : {}),
      ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      ...webhookMetaOf(call._meta),
    };
  },
  run: async (request, context) => {
    const calls = callContextOf(context);
    const handleTool = context.services.handles.toolOf(request.handles !== undefined, request.tool);
    if (handleTool !== undefined) return { reply: await callHandleTool(context, request, handleTool) };
    const prepared = await prepareCall(calls, request);
    if (!prepared.asTask) {
      // Without SSE a plain call blocks its request until the tool ends: it holds a slot as a stream would
      // (stream-limit.ts), taken before anything is queued so that a refused call runs nothing.
      // Taking the slot writes: the request is opened first (RequestOpening); with SSE the create script opens it.
      const run = () => runPlainCall(context, prepared);
      if (context.canStream) return { reply: await run() };
      await ensureOpened(request.opening);
      return { reply: await holdingSlot(context, run) };
    }
    const { record, tool } = await startCall(calls, prepared);
    // Not even built unless debug is on: the audit record says the same at info (T-AUDIT-1).
    if (context.services.log.isDebugEnabled())
      context.log.debug('task created', {
        taskId: record.taskId,
        tool: tool.name,
        owner: record.owner,
        ttl: record.ttl,
      });
    return { task: record, tool: tool.name };
  },
  render: (outcome) => {
    if ('reply' in outcome) return outcome.reply;
    const { task, tool } = outcome;
    return {
      task: toWireTask(task),
      _meta: {
        [MODEL_IMMEDIATE_RESPONSE_META_KEY]:
          `Started '${tool}' as task ${task.taskId}. It runs in the background; ` +
          'its result will be available through tasks/result.',
      },
    };
  },
});

/** A plain call: started, then answered as JSON when it ends soon, or on a stream of its messages. */
async function runPlainCall(context: RequestContext, prepared: PreparedCall): Promise<HandlerReply> {
  const { services, session } = context;
  // The stream starts where the session's events stand now, before the call exists (sent first on the connection
  // the record is written on, so Redis reads it first; no round trip of its own).
  const since = context.canStream ? services.events.lastId(session.sessionId) : undefined;
  since?.catch(() => undefined); // awaited by answer(); a failed create must not leave it unhandled
  // Watched from its creation: its end wakes this request without a read first (TaskService.createWatched). Filed
  // under its request id for notifications/cancelled by the same step: the entry is in before the call is read,
  // deleted, handed out or answered, with no command of its own.
  const { record, waiter } = await startCall(callContextOf(context), prepared, {
    watch: true,
    filed: context.requestId,
  });
  // Its request began as its record was made: a resumed answer stream finds the same deadline (streams.ts).
  const handAt = services.handles.deadline(prepared.request.handles !== undefined, prepared.tool, record.createdAt);
  // Awaited as JSON when it ends within RESULT_STREAM_AFTER_MS, else on a stream of its progress and input requests
  // from `since` on (as tasks/result does); without SSE, as JSON after the whole wait. Still running at its handle
  // deadline, it is handed out (as JSON; a stream hands it out itself, streams.ts).
  const gone = 'The call expired before it finished';
  const outcome = await awaitTask(services, record.taskId, {
    // Made on first use (post.ts).
    get signal() {
      return context.signal;
    },
    // The record as written, and the waiter opened before: the first wait needs no read.
    ...(waiter ? { waiter, first: () => Promise.resolve(record) } : {}),
    // Read and, once the call ended, deleted in one step (PlainCalls.take).
    read: () => services.plainCalls.take(record, context.requestId, gone),
    plainCall: { record, requestId: context.requestId, filed: true },
    stop: handAt !== undefined ? { handAt } : {},
    ...(since ? { stream: { afterMs: services.config.RESULT_STREAM_AFTER_MS, since: () => since } } : {}),
  });
  if ('ended' in outcome) return plainResultOf(outcome.ended);
  if ('handedOut' in outcome) return handleStartedResult({ record: outcome.handedOut }, services.handles.names);
  if ('stream' in outcome) return new StreamReply(outcome.stream, outcome.since);
  throw new Error(`tools/call: unexpected end of the wait (${Object.keys(outcome).join()})`);
}

/**
 * A handle tool (calls/handles.ts), answered here without a job. task_result waits a little for the task, as
 * tasks/result does: that wait holds one of the session's slots (stream-limit.ts), as a waiting request does.
 */
async function callHandleTool(context: RequestContext, request: CallRequest, tool: HandleTool): Promise<HandlerReply> {
  const { names } = context.services.handles;
  // Listed with taskSupport 'forbidden' (T-TOOL-2): never a task themselves.
  if (request.execution === 'task') throw new TaskSupportError(request.tool, 'forbidden');
  const call = parseHandleArguments(tool, request.tool, request.arguments);
  const run = () => runHandleTool(callContextOf(context), call, request, context.signal);
  const outcome: HandleOutcome = tool === HandleTool.Result ? await holdingSlot(context, run) : await run();
  return 'ended' in outcome ? resultOf(outcome.ended) : handleStatusResult(outcome.status, names);
}
