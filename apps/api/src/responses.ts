// Writing JSON-RPC messages onto HTTP responses, as JSON or as a one-message SSE stream.
import type { Response } from 'express';
import { errorResponse, type JsonRpcResponse } from '@mcp-tasks/protocol';
import type { ReplyFormat } from './http-guards.ts';

/** A transport-level failure: an HTTP status with a JSON-RPC error body (id null). */
export function sendHttpError(res: Response, status: number, code: number, message: string): void {
  res.locals['rpcErrorCode'] = code; // for the rejection metrics (ops.ts)
  if (res.headersSent) {
    res.end();
    return;
  }
  res.status(status).json(errorResponse(null, { code, message }));
}

export function sendMessage(res: Response, format: ReplyFormat, message: JsonRpcResponse): void {
  if (res.writableEnded || res.destroyed) return;
  if (format === 'json') {
    res.status(200).json(message);
    return;
  }
  res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}
