// Serves one classified 2026-07-28 request statelessly (C26-COEX-1): no session is read or minted (C26-SES-1);
// the caller is authenticated on this request (the router's guard), charged against the rate limits, and answered
// with the HTTP status the revision gives each error (C26 §2.3).
import type { Request, Response } from 'express';
import { audit, AuditEvent, SecurityEvent, type ConnectionSlot } from '@mcp-tasks/engine';
import {
  ErrorCode,
  errorResponse,
  LimitExceededError,
  ModernErrorCode,
  successResponse,
  type JsonRpcErrorObject,
} from '@mcp-tasks/protocol';
import { principalOwner } from '../../auth.ts';
import { admit, isFailedLookup, lookedUpTaskId, noteFailedLookup, rateChargeOf } from '../../calls/admission.ts';
import { ANONYMOUS_OWNER_PREFIX } from '../../calls/tasks.ts';
import { failRequestSpan, startRequestSpan, type RequestSpan } from '../../request-span.ts';
import type { ApiServices } from '../../context.ts';
import { acceptsEventStream, sendJson } from '../../responses.ts';
import { ProgressKeepAlive } from '../../progress-keepalive.ts';
import { SseWriter } from '../../sse.ts';
import { addressOf, principalOf } from '../../request-origin.ts';
import type { WireMethod } from '../method-table.ts';
import { INTERNAL_ERROR } from '../errors.ts';
import { wireErrorOf } from './errors.ts';
import type { ModernRequest, ModernRefusal } from './classify.ts';
import { callContextOf, type Caller, type ModernContext, type ModernReply } from './context.ts';
import { MODERN_METHODS } from './table.ts';
import { SERVER_INFO_META } from './tools.ts';

type ModernMethod = WireMethod<ModernContext, ModernReply>;

/** Errors the revision sends with HTTP 400 (C26-HDR-1, C26-META-4, C26-VER-2); -32601 goes with 404. */
const BAD_REQUEST_CODES = new Set<number>([
  ModernErrorCode.HeaderMismatch,
  ModernErrorCode.MissingRequiredClientCapability,
  ModernErrorCode.UnsupportedProtocolVersion,
]);

export function sendRefusal(res: Response, refusal: ModernRefusal): void {
  res.locals['rpcErrorCode'] = refusal.error.code;
  sendJson(res, refusal.status, errorResponse(refusal.id, refusal.error));
}

export async function serveModern(
  services: ApiServices,
  request: ModernRequest,
  req: Request,
  res: Response,
): Promise<void> {
  const handler = MODERN_METHODS.get(request.method);
  if (!handler) {
    services.metrics.reject(ErrorCode.MethodNotFound);
    sendRefusal(res, {
      status: 404,
      id: request.id,
      error: { code: ErrorCode.MethodNotFound, message: `Method not found: '${request.method}'` },
    });
    return;
  }
  // The request's span, parented by the trace context of its `_meta` (SEP-414) or headers; none while tracing is off.
  const traced = startRequestSpan(request, req, request.protocolVersion, {
    knownMethod: true,
    knownTool: (name) => services.tools.view.entries().has(name),
  });
  try {
    await answerModern(services, request, handler, req, res, traced);
  } finally {
    traced?.span.end();
  }
}

async function answerModern(
  services: ApiServices,
  request: ModernRequest,
  handler: ModernMethod,
  req: Request,
  res: Response,
  traced: RequestSpan | undefined,
): Promise<void> {
  const caller = callerOf(req, res);
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const log = services.log.child({ requestId: request.id, method: request.method, era: 'modern' });
  const rates = services.security.rates;
  const admission = await rates.admit(
    rates.charge(
      caller.owner,
      caller.address,
      rateChargeOf(request.method, request.params, services.handles.enabled ? services.handles.names : undefined),
    ),
  );
  const progressToken = (request.params['_meta'] as Record<string, unknown> | undefined)?.['progressToken'];
  const streams = acceptsEventStream(req.headers.accept);
  let sse: SseWriter | undefined;
  const openSse = () => (sse ??= new SseWriter(res, services.config.SSE_KEEPALIVE_MS));
  const keepAlive =
    streams && isProgressToken(progressToken) && services.config.PROGRESS_KEEPALIVE_MS > 0
      ? new ProgressKeepAlive(progressToken, services.config.PROGRESS_KEEPALIVE_MS)
      : undefined;
  const context: ModernContext = {
    services,
    caller,
    request,
    requestId: request.id,
    signal: controller.signal,
    canStream: streams,
    admission,
    log,
    res,
    ...(traced ? { trace: traced.context, span: traced.span } : {}),
    forwardProgress: async (sessionId, cursor) => {
      if (progressToken === undefined || !streams) return cursor;
      for (const event of await services.events.after(sessionId, cursor)) {
        cursor = event.id;
        if (!('message' in event) || event.message['method'] !== 'notifications/progress') continue;
        openSse().send(keepAlive ? keepAlive.forwarded(event.message) : event.message);
      }
      return cursor;
    },
    ...(keepAlive
      ? { keepAlive: { dueIn: () => keepAlive.dueIn(), send: () => openSse().send(keepAlive.next()) } }
      : {}),
  };
  let outcome: { result: Record<string, unknown> } | { error: JsonRpcErrorObject };
  try {
    admit(services, callContextOf(context).caller, request.method, admission);
    const slot = HOLDING.has(request.method) ? await holdSlot(services, caller, request) : undefined;
    try {
      const reply = await handler.handle(request.params, context);
      if ('streamed' in reply) return;
      outcome = { result: withServerInfo(reply) };
    } finally {
      await slot?.release().catch(() => undefined);
    }
  } catch (failure) {
    const error = wireErrorOf(failure);
    if (error) {
      const handleTool =
        services.handles.toolOf(services.handles.enabled, String(request.params['name'])) !== undefined;
      if (isFailedLookup(request.method, failure, handleTool)) {
        const taskId = lookedUpTaskId(request.method, request.params);
        await noteFailedLookup(services, callContextOf(context).caller, request.method, taskId);
      }
      services.metrics.reject(error.code);
      outcome = { error };
    } else {
      log.error('request failed', {
        error: failure instanceof Error ? (failure.stack ?? failure.message) : String(failure),
      });
      outcome = { error: INTERNAL_ERROR };
    }
  }
  if ('error' in outcome) failRequestSpan(traced, outcome.error);
  const message =
    'result' in outcome ? successResponse(request.id, outcome.result) : errorResponse(request.id, outcome.error);
  if (sse) {
    sse.send(message as unknown as Record<string, unknown>);
    sse.end();
    return;
  }
  if (res.writableEnded || res.destroyed) return;
  if (res.headersSent) {
    // A stream that failed after it began (a listen stream): nothing more can be said on it.
    res.end();
    return;
  }
  const status = 'error' in outcome && BAD_REQUEST_CODES.has(outcome.error.code) ? 400 : 200;
  if ('error' in outcome) res.locals['rpcErrorCode'] = outcome.error.code;
  sendJson(res, status, message);
}

/**
 * Requests that may stay open (a synchronous call waits for its tool; a listen stream lasts): each holds one of its
 * caller's slots meanwhile, MAX_STREAMS_PER_SESSION per caller across replicas — a stateless caller's counterpart
 * of a session's streams on 2025-11-25 (rev2025-11-25/stream-limit.ts).
 */
const HOLDING = new Set(['tools/call', 'subscriptions/listen']);

async function holdSlot(services: ApiServices, caller: Caller, request: ModernRequest): Promise<ConnectionSlot> {
  const slot = await services.security.connections.acquire(`modern-${caller.owner}`);
  if (slot) return slot;
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'too_many_streams',
    principal: caller.owner,
    requestId: request.id,
    address: caller.address,
    method: request.method,
  });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  const max = services.config.MAX_STREAMS_PER_SESSION;
  throw new LimitExceededError(
    'streams_per_caller',
    max,
    `Too many open requests: this caller already has ${max} synchronous calls or listen streams open ` +
      '(MAX_STREAMS_PER_SESSION); wait for one to end, or call the tool as a task',
  );
}

/** Who asks: the authenticated principal, or without authentication the client address (X-SEC-2, docs/security.md). */
function callerOf(req: Request, res: Response): Caller {
  const principal = principalOf(res);
  const address = addressOf(req);
  if (principal !== undefined) return { owner: principalOwner(principal), authenticated: true, address };
  return { owner: `${ANONYMOUS_OWNER_PREFIX}${address}`, authenticated: false, address };
}

function isProgressToken(value: unknown): value is string | number {
  return typeof value === 'string' || typeof value === 'number';
}

function withServerInfo(result: Record<string, unknown>): Record<string, unknown> {
  const meta = result['_meta'];
  return {
    ...result,
    _meta: { ...(typeof meta === 'object' && meta !== null ? meta : {}), ...SERVER_INFO_META },
  };
}
