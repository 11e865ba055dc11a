// The cap on what one session holds open at once (MAX_STREAMS_PER_SESSION, counted in Redis across replicas): SSE
// streams (GET and answer streams, sse-slots.ts), and requests that block until a task ends without
// streaming (JSON-mode tasks/result, plain tools/call without SSE). A blocked request holds what a stream holds — a
// connection, a subscription, periodic reads — so both draw on one budget, and a client cannot double what it
// holds by changing its Accept header.
import {
  audit,
  AuditEvent,
  SecurityEvent,
  type AuditFields,
  type Session,
  type ConnectionSlot,
} from '@mcp-tasks/engine';
import { LimitExceededError, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import type { ApiServices } from '../../context.ts';
import type { RequestContext } from './context.ts';
import { toWireError } from './errors.ts';

/**
 * A slot for one more stream or waiting request of the session, or undefined when all are taken: the refusal is
 * audited (with `fields`: who asked, and how) and counted for /metrics.
 */
export async function acquireSlot(
  services: ApiServices,
  session: Session,
  fields: AuditFields,
): Promise<ConnectionSlot | undefined> {
  const slot = await services.security.connections.acquire(session.sessionId);
  if (slot) return slot;
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'too_many_streams',
    sessionId: session.sessionId,
    principal: session.owner,
    ...fields,
  });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  return undefined;
}

/** The refusal of a session at the cap. */
export function tooManyStreamsError(services: ApiServices): LimitExceededError {
  const max = services.config.MAX_STREAMS_PER_SESSION;
  return new LimitExceededError(
    'streams_per_session',
    max,
    `Too many open streams: this session already has ${max} SSE streams or waiting requests open ` +
      '(MAX_STREAMS_PER_SESSION); close one, or poll tasks/get instead of waiting',
  );
}

/** The -32029 of a session at the cap (POST: as the request's error; GET: with HTTP 429). */
export function tooManyStreams(services: ApiServices): JsonRpcErrorObject {
  return toWireError(tooManyStreamsError(services));
}

/**
 * Runs `wait`, a wait for a task's end, holding one of the session's slots meanwhile; throws -32029 (audited,
 * counted for /metrics) without running it when the session has none free.
 */
export async function holdingSlot<T>(context: RequestContext, wait: () => Promise<T>): Promise<T> {
  const { services, session, requestId, address } = context;
  const slot = await acquireSlot(services, session, { requestId, address });
  if (!slot) throw tooManyStreamsError(services);
  try {
    return await wait();
  } finally {
    await slot.release().catch(() => undefined);
  }
}
