// The span of one JSON-RPC request (docs/observability.md), named and attributed after the OpenTelemetry MCP
// semantic conventions, parented by the trace context the client sent. Made only while tracing is on.
import type { Request } from 'express';
import {
  clientContext,
  SpanKind,
  SpanStatusCode,
  tracer,
  withSpan,
  type Span,
  type TraceContext,
} from '@mcp-tasks/runtime';
import type { JsonRpcErrorObject, JsonRpcId } from '@mcp-tasks/protocol';

export interface RequestSpan {
  span: Span;
  /** The context the request's children (the task's job) are started in. */
  context: TraceContext;
}

/**
 * What a span may be named after. A client can send any method and any tool name: span names must stay a bounded
 * set (backends index them), so a method no wire serves and a tool the catalog does not have get OTHER_NAME.
 */
export interface SpanNames {
  knownMethod: boolean;
  knownTool: (name: string) => boolean;
}

/** The name of what is outside a known set, as OpenTelemetry's conventions write it (`http.request.method`). */
export const OTHER_NAME = '_OTHER';
/** Attributes copy what the client sent, cut to this many characters. */
const MAX_ATTRIBUTE_CHARS = 128;

export function startRequestSpan(
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  req: Request,
  protocolVersion: string,
  names: SpanNames,
): RequestSpan | undefined {
  const otel = tracer();
  if (!otel) return undefined;
  const params = request.params;
  const meta = params?.['_meta'];
  const parent = clientContext(
    meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined,
    req.headers,
  );
  const method = names.knownMethod ? request.method : OTHER_NAME;
  const toolName = request.method === 'tools/call' ? params?.['name'] : undefined;
  const tool = typeof toolName === 'string' ? toolName : undefined;
  // Every tasks/* request names its task (tasks/list excepted): the span says which.
  const taskId = request.method.startsWith('tasks/') ? params?.['taskId'] : undefined;
  const span = otel.startSpan(
    request.method === 'tools/call'
      ? `${method} ${tool !== undefined && names.knownTool(tool) ? tool : OTHER_NAME}`
      : method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': clip(request.method),
        'jsonrpc.request.id': clip(String(request.id)),
        'mcp.protocol.version': clip(protocolVersion),
        'network.transport': 'tcp',
        ...(tool !== undefined ? { 'gen_ai.tool.name': clip(tool), 'gen_ai.operation.name': 'execute_tool' } : {}),
        ...(typeof taskId === 'string' ? { 'mcp.task.id': clip(taskId) } : {}),
      },
    },
    parent,
  );
  return { span, context: withSpan(parent, span) };
}

function clip(text: string): string {
  return text.length > MAX_ATTRIBUTE_CHARS ? `${text.slice(0, MAX_ATTRIBUTE_CHARS - 1)}…` : text;
}

/** Marks the span of a request answered with a JSON-RPC error. */
export function failRequestSpan(traced: RequestSpan | undefined, error: JsonRpcErrorObject): void {
  if (!traced) return;
  traced.span.setAttribute('error.type', String(error.code));
  traced.span.setAttribute('rpc.response.status_code', String(error.code));
  traced.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}
