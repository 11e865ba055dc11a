// The Streamable HTTP endpoint (2025-11-25 transport): POST carries one JSON-RPC message; the session lives in
// Redis, so any replica answers any request.
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Session } from '@mcp-tasks/engine';
import {
  ErrorCode,
  errorResponse,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  JsonRpcResponseSchema,
  ProtocolError,
  RequestIdSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  successResponse,
  type JsonRpcErrorObject,
  type JsonRpcId,
} from '@mcp-tasks/protocol';
import type { ApiServices } from './context.ts';
import { dispatch } from './dispatcher.ts';
import { rebindingGuard, replyFormat } from './http-guards.ts';
import { initialize } from './methods/lifecycle.ts';
import { sendHttpError, sendMessage } from './responses.ts';

const SESSION_HEADER = 'mcp-session-id';
const VERSION_HEADER = 'mcp-protocol-version';

export function mcpRouter(services: ApiServices): Router {
  const router = express.Router();
  router.use(
    '/mcp',
    rebindingGuard({ bindHost: services.config.HOST, allowedOrigins: services.config.ALLOWED_ORIGINS }),
  );
  router.post(
    '/mcp',
    requireJsonContentType,
    express.raw({ type: () => true, limit: services.config.MAX_BODY_BYTES }),
    (req, res, next) => {
      handlePost(services, req, res).catch(next);
    },
  );
  router.get('/mcp', (_req, res) => {
    res.set('Allow', 'POST, DELETE');
    sendHttpError(res, 405, ErrorCode.InvalidRequest, 'Method not allowed: this server offers no GET stream yet');
  });
  router.delete('/mcp', (req, res, next) => {
    handleDelete(services, req, res).catch(next);
  });
  router.all('/mcp', (_req, res) => {
    res.set('Allow', 'POST, GET, DELETE');
    sendHttpError(res, 405, ErrorCode.InvalidRequest, 'Method not allowed');
  });
  router.use('/mcp', bodyErrorHandler(services));
  return router;
}

function requireJsonContentType(req: Request, res: Response, next: NextFunction): void {
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    sendHttpError(res, 415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
    return;
  }
  next();
}

async function handlePost(services: ApiServices, req: Request, res: Response): Promise<void> {
  const format = replyFormat(req.headers.accept);
  if (!format) {
    sendHttpError(
      res,
      406,
      ErrorCode.InvalidRequest,
      'Not Acceptable: Accept must include application/json or text/event-stream',
    );
    return;
  }
  const message = parseBody(req.body as Buffer);
  if ('problem' in message) {
    sendHttpError(res, 400, message.code, message.problem);
    return;
  }
  const body = message.value;

  const request = JsonRpcRequestSchema.safeParse(body);
  if (request.success && request.data.method === 'initialize') {
    const { id, params } = request.data;
    try {
      const { session, result } = await initialize(params, services);
      res.set('Mcp-Session-Id', session.sessionId);
      services.log.info('session created', { sessionId: session.sessionId, protocolVersion: session.protocolVersion });
      sendMessage(res, format, successResponse(id, result));
    } catch (error) {
      if (!(error instanceof ProtocolError))
        services.log.error('initialize failed', { error: error instanceof Error ? error.stack : String(error) });
      sendMessage(res, format, errorResponse(id, toWireError(error)));
    }
    return;
  }

  const session = await sessionOf(services, req, res);
  if (!session) return;

  if (request.success) {
    await answerRequest(services, session, request.data, format, res);
    return;
  }
  if (JsonRpcNotificationSchema.safeParse(body).success || JsonRpcResponseSchema.safeParse(body).success) {
    // Notifications and responses get 202 with no body; nothing we handle needs them yet.
    res.status(202).end();
    return;
  }
  sendHttpError(res, 400, ErrorCode.InvalidRequest, describeInvalidMessage(body));
}

async function answerRequest(
  services: ApiServices,
  session: Session,
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  format: 'json' | 'sse',
  res: Response,
): Promise<void> {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const log = services.log.child({ sessionId: session.sessionId, requestId: request.id, method: request.method });
  const outcome = await dispatch(request.method, request.params, {
    services,
    session,
    requestId: request.id,
    signal: controller.signal,
    log,
  });
  sendMessage(
    res,
    format,
    'result' in outcome ? successResponse(request.id, outcome.result) : errorResponse(request.id, outcome.error),
  );
}

/** The request's session, or an HTTP error already sent: 400 without the header, 404 for an unknown session. */
async function sessionOf(services: ApiServices, req: Request, res: Response): Promise<Session | undefined> {
  const version = req.headers[VERSION_HEADER];
  if (typeof version === 'string' && !(SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
    sendHttpError(
      res,
      400,
      ErrorCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version '${version}' (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
    return undefined;
  }
  const sessionId = req.headers[SESSION_HEADER];
  if (typeof sessionId !== 'string' || sessionId === '') {
    sendHttpError(
      res,
      400,
      ErrorCode.InvalidRequest,
      'Bad Request: Mcp-Session-Id header is required; send initialize first',
    );
    return undefined;
  }
  const session = sessionId.length <= 128 ? await services.sessions.touch(sessionId) : undefined;
  if (!session) {
    sendHttpError(res, 404, -32001, 'Session not found: it expired or was deleted; initialize a new one');
    return undefined;
  }
  return session;
}

async function handleDelete(services: ApiServices, req: Request, res: Response): Promise<void> {
  const sessionId = req.headers[SESSION_HEADER];
  if (typeof sessionId !== 'string' || sessionId === '') {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required');
    return;
  }
  if (!(await services.sessions.delete(sessionId))) {
    sendHttpError(res, 404, -32001, 'Session not found');
    return;
  }
  services.log.info('session deleted', { sessionId });
  res.status(204).end();
}

type ParsedBody = { value: unknown } | { problem: string; code: number };

function parseBody(raw: Buffer | undefined): ParsedBody {
  if (!raw || raw.length === 0)
    return { problem: 'Parse error: the request body is empty', code: ErrorCode.ParseError };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
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

const MAX_JSON_DEPTH = 64;

/** Depth of a parsed JSON value, without recursion; stops counting past the limit. */
function nestingDepth(root: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value !== 'object' || value === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function describeInvalidMessage(body: unknown): string {
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

function toWireError(error: unknown): JsonRpcErrorObject {
  if (error instanceof ProtocolError) return error.toJSON();
  return { code: ErrorCode.InternalError, message: 'Internal error; the server log has the details' };
}

function bodyErrorHandler(services: ApiServices) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') {
      sendHttpError(
        res,
        413,
        ErrorCode.InvalidRequest,
        `Payload Too Large: the body exceeds ${services.config.MAX_BODY_BYTES} bytes (MAX_BODY_BYTES)`,
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
    services.log.error('unhandled request error', { error: error instanceof Error ? error.stack : String(error) });
    sendHttpError(res, 500, ErrorCode.InternalError, 'Internal error; the server log has the details');
  };
}
