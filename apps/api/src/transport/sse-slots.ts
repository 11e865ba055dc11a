// Every SSE stream, a GET stream or a long request's answer stream, holds one of its session's slots
// (MAX_STREAMS_PER_SESSION, counted in Redis across replicas) for as long as it is open.
import type { Request, Response } from 'express';
import { SecurityEvent, type Session, type StreamSlot } from '@mcp-tasks/engine';
import { ErrorCode, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import { SseWriter } from '../sse.ts';
import { rejected } from './session-gate.ts';

/** A slot for one more stream of the session, or undefined when all are taken: the refusal is audited and counted. */
export async function acquireStreamSlot(
  services: ApiServices,
  session: Session,
  req: Request,
): Promise<StreamSlot | undefined> {
  const slot = await services.security.streams.acquire(session.sessionId);
  if (slot) return slot;
  rejected(services, req, { reason: 'too_many_streams', sessionId: session.sessionId, principal: session.owner });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  return undefined;
}

/** What a refused stream is answered with (POST: as the request's error; GET: with HTTP 429). */
export function tooManyStreams(services: ApiServices): JsonRpcErrorObject {
  const max = services.config.MAX_STREAMS_PER_SESSION;
  return {
    code: ErrorCode.LimitExceeded,
    message:
      `Too many open streams: this session already has ${max} SSE streams open (MAX_STREAMS_PER_SESSION); ` +
      'close one, or ask with Accept: application/json',
    data: { limit: 'streams_per_session', max },
  };
}

/** Opens an SSE stream on `res`, lets `write` fill it, then ends it and frees its slot, also when `write` fails. */
export async function serveStream(
  res: Response,
  slot: StreamSlot,
  write: (sse: SseWriter) => Promise<void>,
): Promise<void> {
  const sse = new SseWriter(res);
  try {
    await write(sse);
  } finally {
    sse.end();
    await slot.release().catch(() => undefined);
  }
}
