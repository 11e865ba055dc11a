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
} from '@mcp-tasks/engine';
import type { JsonRpcErrorObject, JsonRpcId } from '@mcp-tasks/protocol';

export interface RequestSpan {
  span: Span;
  /** The context the request's children (the task's job) are started in. */
  context: TraceContext;
}

export function startRequestSpan(
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  req: Request,
  protocolVersion: string,
): RequestSpan | undefined {
  const otel = tracer();
  if (!otel) return undefined;
  const meta = request.params?.['_meta'];
  const parent = clientContext(
    meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined,
    req.headers,
  );
  const toolName = request.method === 'tools/call' ? request.params?.['name'] : undefined;
  const target = typeof toolName === 'string' ? toolName : undefined;
  const span = otel.startSpan(
    target ? `${request.method} ${target}` : request.method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': request.method,
        'jsonrpc.request.id': String(request.id),
        'mcp.protocol.version': protocolVersion,
        'network.transport': 'tcp',
        ...(target ? { 'gen_ai.tool.name': target, 'gen_ai.operation.name': 'execute_tool' } : {}),
      },
    },
    parent,
  );
  return { span, context: withSpan(parent, span) };
}

/** Marks the span of a request answered with a JSON-RPC error. */
export function failRequestSpan(traced: RequestSpan | undefined, error: JsonRpcErrorObject): void {
  if (!traced) return;
  traced.span.setAttribute('error.type', String(error.code));
  traced.span.setAttribute('rpc.response.status_code', String(error.code));
  traced.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}
