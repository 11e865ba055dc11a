// One JSON-RPC dispatcher: method name -> handler; unknown methods get -32601, anything thrown that is not a
// ProtocolError becomes -32603 without internals leaking to the client.
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import type { DeferredOpening, HandlerReply, MethodHandler, RequestContext } from './context.ts';
import { ping } from './methods/lifecycle.ts';
import { cancelTask, getTask, getTaskResult, listTasks } from './methods/tasks.ts';
import { callTool, listTools } from './methods/tools.ts';
import { StreamReply } from './stream-reply.ts';
import { admitTaskOperation, noteFailedLookup } from './task-guards.ts';

const methods: Record<string, MethodHandler> = {
  ping,
  'tools/list': listTools,
  'tools/call': callTool,
  'tasks/get': getTask,
  'tasks/result': getTaskResult,
  'tasks/list': listTasks,
  'tasks/cancel': cancelTask,
};

export type DispatchOutcome =
  | { result: Record<string, unknown> }
  | { error: JsonRpcErrorObject }
  | { stream: StreamReply }
  /** The request's session is gone, as the method's script found opening the request (HTTP 404). */
  | { sessionGone: true };

export async function dispatch(
  method: string,
  params: Record<string, unknown> | undefined,
  context: RequestContext,
): Promise<DispatchOutcome> {
  // With tasks/list off (TASKS_LIST_ENABLED=false) the method does not exist, as the capability says (T-SEC-2).
  const disabled = method === 'tasks/list' && !context.services.config.TASKS_LIST_ENABLED;
  const handler = Object.hasOwn(methods, method) && !disabled ? methods[method] : undefined;
  if (!handler) {
    context.services.metrics.reject(ErrorCode.MethodNotFound);
    return { error: { code: ErrorCode.MethodNotFound, message: `Method not found: '${method}'` } };
  }
  let answer: { reply: HandlerReply } | { error: unknown };
  try {
    if (!context.opening) admitTaskOperation(method, context);
    answer = { reply: await handler(params, context) };
  } catch (error) {
    answer = { error };
  }
  if (context.opening) {
    // Opened by the method's script, or now: a refusal replaces the answer (the handler wrote nothing before).
    try {
      if (await refusedOpening(method, context)) return { sessionGone: true };
    } catch (refusal) {
      answer = { error: refusal };
    }
  }
  if ('reply' in answer) {
    const { reply } = answer;
    return reply instanceof StreamReply ? { stream: reply } : { result: reply };
  }
  const { error } = answer;
  if (error instanceof ProtocolError) {
    await noteFailedLookup(method, params, error, context);
    context.services.metrics.reject(error.code);
    return { error: error.toJSON() };
  }
  context.log.error('request failed', { method, requestId: context.requestId, error: describe(error) });
  return { error: { code: ErrorCode.InternalError, message: 'Internal error; the server log has the details' } };
}

/**
 * Reads how the request's deferred opening went (RequestOpening): true when its session is gone; a rate-limit
 * refusal throws the -32029 the gate would have (audited as there).
 */
async function refusedOpening(method: string, context: RequestContext): Promise<boolean> {
  const { opening, charge } = context.opening as DeferredOpening;
  const opened = await opening.settle();
  if (opened < 0) return true;
  // (The context is copied only for a refusal: its signal and log are made on first read, transport/post.ts.)
  if (opened > 0) {
    admitTaskOperation(method, { ...context, admission: context.services.security.rates.verdictOf(charge, opened) });
  }
  return false;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
