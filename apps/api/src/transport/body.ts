// The POST body before it is a JSON-RPC message: media type, size (MAX_BODY_BYTES), content encoding, UTF-8,
// JSON, nesting depth, and what is wrong with a message that is none of request, response or notification. Each
// problem gets the transport's HTTP status and a JSON-RPC error that says what to fix.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from '@mcp-tasks/runtime';
import { ErrorCode, JsonRpcNotificationSchema, RequestIdSchema } from '@mcp-tasks/protocol';
import { sendHttpError } from '../responses.ts';

const MAX_JSON_DEPTH = 64;

export function requireJsonContentType(req: Request, res: Response, next: NextFunction): void {
  const header = req.headers['content-type'];
  const type = header === 'application/json' ? header : header?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    sendHttpError(res, 415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
    return;
  }
  next();
}

/**
 * Reads the body as bytes, decompressed, up to `maxBytes`; parseBody makes JSON of it. The usual request (a
 * Content-Length, no Content-Encoding) is read here, once, into one buffer; anything else (compressed, chunked)
 * goes through express's reader, which also decompresses. Both report their errors the same way (bodyErrorHandler).
 */
export function rawBody(maxBytes: number): RequestHandler {
  const general = express.raw({ type: () => true, limit: maxBytes });
  return (req, res, next) => {
    const encoding = req.headers['content-encoding'];
    const length = Number(req.headers['content-length']);
    const plain = encoding === undefined || encoding.toLowerCase() === 'identity';
    if (!plain || req.headers['transfer-encoding'] !== undefined || !Number.isSafeInteger(length) || length < 0) {
      general(req, res, next);
      return;
    }
    if (length > maxBytes) {
      // As express's reader: refused on the declared length, before a byte of the body is read.
      next(bodyError('request entity too large', 'entity.too.large', 413));
      return;
    }
    const body = Buffer.allocUnsafe(length);
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      // Node's parser keeps to Content-Length, so a chunk never goes past it.
      chunk.copy(body, received);
      received += chunk.length;
    });
    // `on`, not `once`: each of these events comes at most once, and a once-wrapper is one more closure per request.
    req.on('end', () => {
      if (received !== length) {
        next(bodyError('request size did not match content length', 'request.size.invalid', 400));
        return;
      }
      req.body = body;
      next();
    });
    req.on('aborted', () => next(bodyError('request aborted', 'request.aborted', 400)));
  };
}

function bodyError(message: string, type: string, status: number): Error {
  return Object.assign(new Error(message), { type, status, expose: true });
}

// One decoder for every body: a whole-buffer decode (never `stream`) keeps no state from one call to the next.
const utf8 = new TextDecoder('utf-8', { fatal: true });

export type ParsedBody = { value: unknown } | { problem: string; code: number };

export function parseBody(raw: Buffer | undefined): ParsedBody {
  if (!raw || raw.length === 0)
    return { problem: 'Parse error: the request body is empty', code: ErrorCode.ParseError };
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return { problem: 'Parse error: the request body is not valid UTF-8', code: ErrorCode.ParseError };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `Parse error: ${(error as Error).message}`, code: ErrorCode.ParseError };
  }
  if (Array.isArray(value)) {
    return {
      problem: 'Invalid Request: JSON-RPC batches are not supported since protocol 2025-06-18',
      code: ErrorCode.InvalidRequest,
    };
  }
  if (nestingDepth(value) > MAX_JSON_DEPTH) {
    // Deeper structures would overflow the stack wherever they are walked (validation, serialisation, logging).
    return {
      problem: `Invalid Request: the message is nested deeper than ${MAX_JSON_DEPTH} levels`,
      code: ErrorCode.InvalidRequest,
    };
  }
  return { value };
}

/** Depth of a parsed JSON value, without recursion; stops counting past the limit. */
function nestingDepth(root: unknown): number {
  if (typeof root !== 'object' || root === null) return 0;
  let deepest = 0;
  // Two stacks side by side, objects and their depths: no pair allocated per value of the message.
  const values: object[] = [root];
  const depths: number[] = [1];
  for (let value = values.pop(); value !== undefined; value = values.pop()) {
    const depth = depths.pop() as number;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > MAX_JSON_DEPTH) return deepest;
    }
    for (const child of Object.values(value)) {
      if (typeof child !== 'object' || child === null) continue;
      values.push(child as object);
      depths.push(depth + 1);
    }
  }
  return deepest;
}

/** Why a parsed body is not a JSON-RPC message we take, for the 400 answer. */
export function describeInvalidMessage(body: unknown): string {
  if (typeof body !== 'object' || body === null) return 'Invalid Request: the message must be a JSON object';
  const message = body as Record<string, unknown>;
  if (message['jsonrpc'] !== '2.0') return 'Invalid Request: \'jsonrpc\' must be "2.0"';
  if ('method' in message && !JsonRpcNotificationSchema.shape.method.safeParse(message['method']).success) {
    return "Invalid Request: 'method' must be a string of 1 to 256 characters";
  }
  if ('id' in message && !RequestIdSchema.safeParse(message['id']).success) {
    return "Invalid Request: 'id' must be a string (at most 256 characters) or a safe integer, never null";
  }
  if (
    'params' in message &&
    (typeof message['params'] !== 'object' || message['params'] === null || Array.isArray(message['params']))
  ) {
    return "Invalid Request: 'params' must be an object";
  }
  return 'Invalid Request: not a JSON-RPC request, notification or response';
}

/**
 * The errors of the body reader (too large, unknown encoding, aborted upload, undecodable), as the transport
 * answers them; anything else that reached express is a 500 whose details go to the log only.
 */
export function bodyErrorHandler(maxBodyBytes: number, log: Logger) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') {
      sendHttpError(
        res,
        413,
        ErrorCode.InvalidRequest,
        `Payload Too Large: the body exceeds ${maxBodyBytes} bytes (MAX_BODY_BYTES)`,
      );
      return;
    }
    if (type === 'encoding.unsupported') {
      sendHttpError(res, 415, ErrorCode.InvalidRequest, `Unsupported Media Type: ${(error as Error).message}`);
      return;
    }
    if (type === 'request.aborted' || type === 'request.size.invalid') {
      sendHttpError(res, 400, ErrorCode.InvalidRequest, `Bad Request: ${(error as Error).message}`);
      return;
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // The body reader rejected the body itself, e.g. a Content-Encoding that does not decompress.
      sendHttpError(
        res,
        400,
        ErrorCode.ParseError,
        `Parse error: the request body could not be decoded: ${(error as Error).message}`,
      );
      return;
    }
    log.error('unhandled request error', { error: error instanceof Error ? error.stack : String(error) });
    sendHttpError(res, 500, ErrorCode.InternalError, 'Internal error; the server log has the details');
  };
}
