// One JSON-RPC dispatcher: method name -> handler; unknown methods get -32601, anything thrown that is not a
// ProtocolError becomes -32603 without internals leaking to the client.
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import type { MethodHandler, RequestContext } from './context.ts';
import { ping } from './methods/lifecycle.ts';
import { cancelTask, getTask, getTaskResult, listTasks } from './methods/tasks.ts';
import { callTool, listTools } from './methods/tools.ts';

const methods: Record<string, MethodHandler> = {
  ping,
  'tools/list': listTools,
  'tools/call': callTool,
  'tasks/get': getTask,
  'tasks/result': getTaskResult,
  'tasks/list': listTasks,
  'tasks/cancel': cancelTask,
};

export type DispatchOutcome = { result: Record<string, unknown> } | { error: JsonRpcErrorObject };

export async function dispatch(
  method: string,
  params: Record<string, unknown> | undefined,
  context: RequestContext,
): Promise<DispatchOutcome> {
  const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
  if (!handler) {
    return { error: { code: ErrorCode.MethodNotFound, message: `Method not found: '${method}'` } };
  }
  try {
    return { result: await handler(params, context) };
  } catch (error) {
    if (error instanceof ProtocolError) return { error: error.toJSON() };
    context.log.error('request failed', { method, requestId: context.requestId, error: describe(error) });
    return { error: { code: ErrorCode.InternalError, message: 'Internal error; the server log has the details' } };
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
