// POST /mcp on the 2025-11-25 wire: one JSON-RPC message. initialize opens a session; a request is dispatched and answered as JSON or on
// an SSE stream; a response answers one of our requests to the client; a notification gets 202.
import type { Request, Response } from 'express';
import type { Session } from '@mcp-tasks/engine';
import type { Logger } from '@mcp-tasks/runtime';
import {
  asJsonRpcRequest,
  ErrorCode,
  errorResponse,
  JsonRpcNotificationSchema,
  JsonRpcResponseSchema,
  successResponse,
  TaskKind,
  type JsonRpcErrorObject,
  type JsonRpcId,
} from '@mcp-tasks/protocol';
import { answerInputById } from '../../calls/inputs.ts';
import { cancelledRequestOf } from '../../calls/plain-calls.ts';
import type { ApiServices } from '../../context.ts';
import type { RequestContext } from './context.ts';
import { dispatch, isLegacyMethod } from './dispatch.ts';
import { initialize } from './lifecycle.ts';
import { acceptsEventStream, sendHttpError, sendMessage, type ReplyFormat } from '../../responses.ts';
import { toWireError, wireErrorOf } from './errors.ts';
import { failRequestSpan, startRequestSpan, type RequestSpan } from '../../request-span.ts';
import { tooManyStreams } from './stream-limit.ts';
import { streamAnswer } from './streams.ts';
import { describeInvalidMessage } from '../../transport/body.ts';
import { addressOf, principalOf } from '../../request-origin.ts';
import { rejected } from '../../transport/rejected.ts';
import { openSession, sessionNotFound, type OpenedSession } from './session-gate.ts';
import { acquireStreamSlot, serveStream } from './sse-slots.ts';

/**
 * Serves a POST the newer wires left to this one (the table in ../index.ts): initialize, or a message of a session.
 * The transport has checked Accept (`format`) and parsed the body.
 */
export async function handlePost(
  services: ApiServices,
  body: unknown,
  format: ReplyFormat,
  req: Request,
  res: Response,
): Promise<void> {
  // The envelope is judged once here; the method's handler parses its params with its own schema.
  const request = asJsonRpcRequest(body);
  if (request?.method === 'initialize') {
    const { id, params } = request;
    try {
      const { session, result } = await initialize(params, services, principalOf(res), addressOf(req));
      res.set('Mcp-Session-Id', session.sessionId);
      services.log.info('session created', { sessionId: session.sessionId, protocolVersion: session.protocolVersion });
      sendMessage(res, format, successResponse(id, result));
    } catch (error) {
      if (!wireErrorOf(error))
        services.log.error('initialize failed', { error: error instanceof Error ? error.stack : String(error) });
      sendMessage(res, format, errorResponse(id, toWireError(error)));
    }
    return;
  }

  // req.ip runs express's proxy-address check each time it is read: once per request here.
  const address = addressOf(req);
  const opened = await openSession(
    services,
    req,
    res,
    request?.method,
    request !== undefined && opensInItsScript(request),
    address,
    request?.params,
  );
  if (!opened) return;
  const { session } = opened;

  if (request) {
    await answerRequest(services, opened, request, format, address, req, res);
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

function answerRequest(
  services: ApiServices,
  opened: OpenedSession,
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  format: ReplyFormat,
  address: string,
  req: Request,
  res: Response,
): Promise<void> {
  const traced = startRequestSpan(request, req, opened.session.protocolVersion, {
    knownMethod: isLegacyMethod(request.method),
    knownTool: (name) => services.tools.view.entries().has(name),
  });
  const answered = dispatchAndAnswer(services, opened, request, format, address, req, res, traced);
  // Without tracing there is no span to end: no callback waits for the answer.
  return traced ? answered.finally(() => traced.span.end()) : answered;
}

async function dispatchAndAnswer(
  services: ApiServices,
  { session, admission, opening }: OpenedSession,
  request: { id: JsonRpcId; method: string; params?: Record<string, unknown> | undefined },
  format: ReplyFormat,
  address: string,
  req: Request,
  res: Response,
  traced: RequestSpan | undefined,
): Promise<void> {
  // The signal and the request's logger are made when a handler first asks for them: most requests (tools/call as
  // a task, tasks/result of a finished task) never do, and an AbortSignal is dear to make.
  let controller: AbortController | undefined;
  let log: Logger | undefined;
  const context: RequestContext = {
    services,
    session,
    requestId: request.id,
    headers: req.headers,
    get signal() {
      return (controller ??= abortedOnClose(res)).signal;
    },
    canStream: acceptsEventStream(req.headers.accept),
    address,
    admission,
    ...(opening ? { opening } : {}),
    get log() {
      log ??= services.log.child({ sessionId: session.sessionId, requestId: request.id, method: request.method });
      return log;
    },
    ...(traced ? { trace: traced.context, span: traced.span } : {}),
  };
  const outcome = await dispatch(request.method, request.params, context);
  if ('sessionGone' in outcome) {
    // The method's script found the session gone (deleted through any replica, or expired) as it opened the request.
    sessionNotFound(res);
    return;
  }
  if ('error' in outcome) failRequestSpan(traced, outcome.error);
  if (!('stream' in outcome)) {
    sendMessage(
      res,
      format,
      'result' in outcome ? successResponse(request.id, outcome.result) : errorResponse(request.id, outcome.error),
    );
    return;
  }
  const { task, since } = outcome.stream;
  const slot = await acquireStreamSlot(services, session, req);
  if (!slot) {
    // The request is answered with an error, so nobody will wait for a plain call's answer: its work stops.
    if (task.kind === TaskKind.PlainToolCall) {
      await services.plainCalls.abandon(task, request.id, 'No stream was available for the answer.');
    }
    sendMessage(res, format, errorResponse(request.id, tooManyStreams(services)));
    return;
  }
  await serveStream(services, res, slot, async (sse) => {
    const stream = {
      taskId: task.taskId,
      taskKind: task.kind,
      requestId: request.id,
      sessionId: task.sessionId,
      ...(since !== undefined ? { since } : {}),
    };
    await streamAnswer(services, session, stream, sse, context.signal).catch((error: unknown) => {
      sse.send(errorResponse(request.id, toWireError(error)) as unknown as Record<string, unknown>);
    });
  });
}

/**
 * The controller of a request's signal: aborted when the client goes away before its answer, or at once if it has.
 * Made on demand, with its listener: until then, `closed` says whether that happened.
 */
function abortedOnClose(res: Response): AbortController {
  const controller = new AbortController();
  if (res.closed) {
    if (!res.writableFinished) controller.abort();
    return controller;
  }
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller;
}

/**
 * Requests whose method starts its work with a script that can open the request in the same step (create-task-6.lua
 * for a tools/call, a task's or a plain call's; get-owned-1.lua for tasks/result, tasks/get and tasks/cancel, whose
 * cancelling transition follows that read): their session gate costs no round trip of its own when this replica
 * knows the session. A call that must write before its record (a plain call holding a stream slot, a handle tool)
 * opens it first on its own (ensureOpened), and the dispatcher settles it before any answer (dispatch.ts).
 */
const OPENS_IN_ITS_SCRIPT: ReadonlySet<string> = new Set(['tools/call', 'tasks/result', 'tasks/get', 'tasks/cancel']);

function opensInItsScript(request: { method: string }): boolean {
  return OPENS_IN_ITS_SCRIPT.has(request.method);
}

/** Notifications get 202 whatever they say; notifications/cancelled stops the plain call it names. */
async function handleNotification(
  services: ApiServices,
  session: Session,
  notification: { method: string; params?: Record<string, unknown> | undefined },
): Promise<void> {
  const cancelled = cancelledRequestOf(notification);
  if (!cancelled) return;
  if (await services.plainCalls.cancel(session, cancelled.requestId, cancelled.reason)) {
    services.log.info('plain call cancelled', { sessionId: session.sessionId, requestId: cancelled.requestId });
  }
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
  const verdict = response.id === null ? 'unknown' : await answerInputById(services, session, response.id, answer);
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
