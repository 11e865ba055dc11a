// The Streamable HTTP endpoint (2025-11-25 transport): POST carries one JSON-RPC message; the session lives in
// Redis, so any replica answers any request.
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { audit, AuditEvent, SecurityEvent, type AuditFields, type RateVerdict, type Session } from '@mcp-tasks/engine';
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
  TaskKind,
  type JsonRpcErrorObject,
  type JsonRpcId,
} from '@mcp-tasks/protocol';
import { authGuard, principalOwner } from './auth.ts';
import type { ApiServices } from './context.ts';
import { dispatch } from './dispatcher.ts';
import { acceptsEventStream, rebindingGuard, replyFormat } from './http-guards.ts';
import { initialize } from './methods/lifecycle.ts';
import { sendHttpError, sendMessage } from './responses.ts';
import { parseEventId, SseWriter } from './sse.ts';
import { streamAnswer, streamSession } from './streams.ts';
import { rateChargeOf } from './task-guards.ts';

const SESSION_HEADER = 'mcp-session-id';
const VERSION_HEADER = 'mcp-protocol-version';

export function mcpRouter(services: ApiServices): Router {
  const router = express.Router();
  router.use(
    '/mcp',
    rebindingGuard({ bindHost: services.config.HOST, allowedOrigins: services.config.ALLOWED_ORIGINS }),
    authGuard(services.security.auth, (req, outcome) => {
      if (outcome.ok) return;
      services.security.rates.count(SecurityEvent.AuthFailure).catch(() => undefined);
      rejected(services, req, { reason: outcome.reason === 'missing' ? 'no_token' : 'invalid_token' });
    }),
  );
  router.post(
    '/mcp',
    requireJsonContentType,
    express.raw({ type: () => true, limit: services.config.MAX_BODY_BYTES }),
    (req, res, next) => {
      handlePost(services, req, res).catch(next);
    },
  );
  router.get('/mcp', (req, res, next) => {
    handleGet(services, req, res).catch(next);
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
      const { session, result } = await initialize(params, services, principalOf(res));
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

  const opened = await sessionOf(services, req, res, request.success ? request.data.method : undefined);
  if (!opened) return;
  const { session } = opened;

  if (request.success) {
    await answerRequest(services, opened, request.data, format, req, res);
    return;
  }
  const response = JsonRpcResponseSchema.safeParse(body);
  if (response.success) {
    await acceptClientResponse(services, session, response.data, req, res);
    return;
  }
  const notification = JsonRpcNotificationSchema.safeParse(body);
  if (notification.success) {
    await handleNotification(services, session, notification.data);
    res.status(202).end();
    return;
  }
  sendHttpError(res, 400, ErrorCode.InvalidRequest, describeInvalidMessage(body));
}

async function answerRequest(
  services: ApiServices,
  { session, admission }: OpenedSession,
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  format: 'json' | 'sse',
  req: Request,
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
    canStream: acceptsEventStream(req.headers.accept),
    address: addressOf(req),
    admission,
    log,
  });
  if ('stream' in outcome) {
    const slot = await services.security.streams.acquire(session.sessionId);
    if (!slot) {
      await refuseStream(services, session, outcome.stream.task, request.id, req);
      sendMessage(res, format, errorResponse(request.id, tooManyStreams(services)));
      return;
    }
    const sse = new SseWriter(res);
    try {
      await streamAnswer(
        services,
        session,
        {
          taskId: outcome.stream.task.taskId,
          taskKind: outcome.stream.task.kind,
          requestId: request.id,
          sessionId: outcome.stream.task.sessionId,
          ...(outcome.stream.since !== undefined ? { since: outcome.stream.since } : {}),
        },
        sse,
        controller.signal,
      );
    } catch (error) {
      sse.send(errorResponse(request.id, toWireError(error)) as unknown as Record<string, unknown>);
    } finally {
      sse.end();
      await slot.release().catch(() => undefined);
    }
    return;
  }
  sendMessage(
    res,
    format,
    'result' in outcome ? successResponse(request.id, outcome.result) : errorResponse(request.id, outcome.error),
  );
}

interface OpenedSession {
  session: Session;
  /** The rate-limit verdict on a request of `method` (always ok for what is not a task operation). */
  admission: RateVerdict;
}

/**
 * The request's session, or an HTTP error already sent: 400 without the header, 404 for an unknown session. A
 * request of `method` is counted against the rate limits in the same round trip (task-guards.ts decides which).
 */
async function sessionOf(
  services: ApiServices,
  req: Request,
  res: Response,
  method?: string,
): Promise<OpenedSession | undefined> {
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
  const principal = principalOf(res);
  // The owner the session must have: with authentication, the caller's; without, the session is its own owner.
  const owner = principal !== undefined ? principalOwner(principal) : `session:${sessionId}`;
  const rates = services.security.rates;
  const charge = rates.charge(owner, addressOf(req), method === undefined ? 'free' : rateChargeOf(method));
  const touched = sessionId.length <= 128 ? await services.sessions.touch(sessionId, charge) : undefined;
  const session = touched?.session;
  // With authentication, another principal's session is answered exactly like an unknown one (T-SEC-1).
  const foreign = session !== undefined && principal !== undefined && session.owner !== principalOwner(principal);
  if (!session || foreign) {
    if (foreign) {
      services.security.rates.count(SecurityEvent.ForeignSession).catch(() => undefined);
      rejected(services, req, { reason: 'foreign_session', sessionId, principal: principalOwner(principal) });
    }
    sendHttpError(
      res,
      404,
      ErrorCode.SessionNotFound,
      'Session not found: it expired or was deleted; initialize a new one',
    );
    return undefined;
  }
  return { session, admission: rates.verdictOf(charge, touched.refused) };
}

/**
 * GET opens the session's event stream, or resumes an interrupted stream after Last-Event-ID (on any replica: the
 * events are in Redis).
 */
async function handleGet(services: ApiServices, req: Request, res: Response): Promise<void> {
  if (!acceptsEventStream(req.headers.accept)) {
    sendHttpError(res, 406, ErrorCode.InvalidRequest, 'Not Acceptable: a GET stream needs Accept: text/event-stream');
    return;
  }
  const session = (await sessionOf(services, req, res))?.session;
  if (!session) return;
  const lastEventId = req.headers['last-event-id'];
  const position = typeof lastEventId === 'string' && lastEventId !== '' ? parseEventId(lastEventId) : undefined;
  if (typeof lastEventId === 'string' && lastEventId !== '' && !position) {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, `Bad Request: Last-Event-ID '${lastEventId}' is not one of ours`);
    return;
  }
  const slot = await services.security.streams.acquire(session.sessionId);
  if (!slot) {
    rejected(services, req, { reason: 'too_many_streams', sessionId: session.sessionId, principal: session.owner });
    services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
    const { code, message } = tooManyStreams(services);
    sendHttpError(res, 429, code, message);
    return;
  }
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  const sse = new SseWriter(res);
  try {
    if (position?.kind === 'task') {
      await streamAnswer(services, session, position, sse, controller.signal).catch((error: unknown) => {
        sse.send(errorResponse(position.requestId, toWireError(error)) as unknown as Record<string, unknown>);
      });
    } else {
      await streamSession(services, session, position?.after, sse, controller.signal);
    }
  } finally {
    sse.end();
    await slot.release().catch(() => undefined);
  }
}

/** Notifications get 202 whatever they say; notifications/cancelled stops the plain call it names. */
async function handleNotification(
  services: ApiServices,
  session: Session,
  notification: { method: string; params?: Record<string, unknown> | undefined },
): Promise<void> {
  if (notification.method !== 'notifications/cancelled') return;
  const requestId = notification.params?.['requestId'];
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
  const reason = notification.params?.['reason'];
  const cancelled = await services.plainCalls.cancel(
    session,
    requestId,
    typeof reason === 'string' && reason !== '' ? reason.slice(0, 200) : 'The client cancelled the request.',
  );
  if (cancelled) services.log.info('plain call cancelled', { sessionId: session.sessionId, requestId });
}

/** A client's answer to one of our requests (elicitation, sampling): routed to the waiting worker. */
async function acceptClientResponse(
  services: ApiServices,
  session: Session,
  response: { id: JsonRpcId | null; result?: Record<string, unknown>; error?: JsonRpcErrorObject },
  req: Request,
  res: Response,
): Promise<void> {
  const answer = response.error ? { error: response.error } : { result: response.result ?? {} };
  const verdict = response.id === null ? 'unknown' : await services.inputs.answer(session, response.id, answer);
  if (verdict === 'accepted') {
    res.status(202).end();
    return;
  }
  const problem =
    verdict === 'already-answered'
      ? `request '${String(response.id)}' was already answered`
      : `no request '${String(response.id)}' is waiting for this session`;
  services.log.warn('client response rejected', { sessionId: session.sessionId, requestId: response.id, verdict });
  if (verdict === 'unknown') {
    rejected(services, req, {
      reason: 'input_response_not_for_session',
      sessionId: session.sessionId,
      principal: session.owner,
      ...(response.id !== null ? { requestId: response.id } : {}),
    });
  }
  sendHttpError(res, 400, ErrorCode.InvalidParams, `Invalid response: ${problem}`);
}

async function handleDelete(services: ApiServices, req: Request, res: Response): Promise<void> {
  const sessionId = req.headers[SESSION_HEADER];
  if (typeof sessionId !== 'string' || sessionId === '') {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required');
    return;
  }
  const principal = principalOf(res);
  if (principal !== undefined) {
    // Only the principal that created a session may end it; anyone else gets the unknown-session answer.
    const session = sessionId.length <= 128 ? await services.sessions.get(sessionId) : undefined;
    if (session?.owner !== principalOwner(principal)) {
      if (session)
        rejected(services, req, { reason: 'foreign_session', sessionId, principal: principalOwner(principal) });
      sendHttpError(res, 404, ErrorCode.SessionNotFound, 'Session not found');
      return;
    }
  }
  if (!(await services.sessions.delete(sessionId))) {
    sendHttpError(res, 404, ErrorCode.SessionNotFound, 'Session not found');
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

/** The authenticated principal of the request (set by authGuard), undefined without authentication. */
function principalOf(res: Response): string | undefined {
  const principal: unknown = res.locals['principal'];
  return typeof principal === 'string' ? principal : undefined;
}

export function addressOf(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}

function rejected(services: ApiServices, req: Request, fields: AuditFields): void {
  audit(services.security.audit, AuditEvent.AccessRejected, {
    address: addressOf(req),
    httpMethod: req.method,
    ...fields,
  });
}

function tooManyStreams(services: ApiServices): JsonRpcErrorObject {
  const max = services.config.MAX_STREAMS_PER_SESSION;
  return {
    code: ErrorCode.LimitExceeded,
    message:
      `Too many open streams: this session already has ${max} SSE streams open (MAX_STREAMS_PER_SESSION); ` +
      'close one, or ask with Accept: application/json',
    data: { limit: 'streams_per_session', max },
  };
}

/** A stream the session has no slot for: the request is answered with an error, so a plain call's work stops. */
async function refuseStream(
  services: ApiServices,
  session: Session,
  stream: { taskId: string; kind: TaskKind; sessionId: string },
  requestId: JsonRpcId,
  req: Request,
): Promise<void> {
  rejected(services, req, { reason: 'too_many_streams', sessionId: session.sessionId, principal: session.owner });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  if (stream.kind !== TaskKind.PlainToolCall) return;
  await services.plainCalls.abandon(stream, requestId, 'No stream was available for the answer.');
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
