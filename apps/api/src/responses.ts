// Writing JSON-RPC messages onto HTTP responses, as JSON or as a one-message SSE stream, and which of the two the
// client accepts.
import type { Response } from 'express';
import { errorResponse, type JsonRpcResponse } from '@mcp-tasks/protocol';

export type ReplyFormat = 'json' | 'sse';

export function acceptsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && judgeAccept(accept).streams;
}

/** Which body format the client can take (JSON preferred); undefined means 406. */
export function replyFormat(accept: string | undefined): ReplyFormat | undefined {
  return accept === undefined ? 'json' : judgeAccept(accept).format;
}

interface AcceptVerdict {
  format: ReplyFormat | undefined;
  streams: boolean;
}

// A client sends the same Accept header with each of its requests, and every POST asks both questions of it: the
// last header's verdict is kept.
let lastAccept: { accept: string; verdict: AcceptVerdict } | undefined;

function judgeAccept(accept: string): AcceptVerdict {
  if (lastAccept?.accept === accept) return lastAccept.verdict;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  const streams = types.includes('text/event-stream');
  const json =
    accept.trim() === '' ||
    types.some((type) => type === 'application/json' || type === 'application/*' || type === '*/*');
  const verdict: AcceptVerdict = { format: json ? 'json' : streams ? 'sse' : undefined, streams };
  lastAccept = { accept, verdict };
  return verdict;
}

/** A transport-level failure: an HTTP status with a JSON-RPC error body (id null). */
export function sendHttpError(res: Response, status: number, code: number, message: string): void {
  res.locals['rpcErrorCode'] = code; // for the rejection metrics (ops.ts)
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, status, errorResponse(null, { code, message }));
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What `res.status(status).json(value)` sends, byte for byte (express: JSON.stringify, `application/json;
 * charset=utf-8`, Content-Length; no ETag, which the app turns off), without express's general send path: the
 * headers go in one writeHead, whatever was set before (Mcp-Session-Id, Allow, WWW-Authenticate) kept. A response
 * that already has a Content-Type goes through express, which keeps it.
 */
export function sendJson(res: Response, status: number, value: unknown): void {
  if (res.hasHeader('content-type')) {
    res.status(status).json(value);
    return;
  }
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body, 'utf8') });
  if (res.req.method === 'HEAD') res.end();
  else res.end(body, 'utf8');
}

export function sendMessage(res: Response, format: ReplyFormat, message: JsonRpcResponse): void {
  if (res.writableEnded || res.destroyed) return;
  if (format === 'json') {
    sendJson(res, 200, message);
    return;
  }
  res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}
