// Every SSE stream, a GET stream or a long request's answer stream, holds one of its session's slots
// (MAX_STREAMS_PER_SESSION, counted in Redis across replicas) for as long as it is open.
import type { Request, Response } from 'express';
import type { Session, ConnectionSlot } from '@mcp-tasks/engine';
import type { ApiServices } from '../../context.ts';
import { SseWriter } from '../../sse.ts';
import { acquireSlot } from './stream-limit.ts';
import { addressOf } from '../../request-origin.ts';

/** A slot for one more stream of the session (stream-limit.ts), or undefined when all are taken. */
export function acquireStreamSlot(
  services: ApiServices,
  session: Session,
  req: Request,
): Promise<ConnectionSlot | undefined> {
  return acquireSlot(services, session, { address: addressOf(req), httpMethod: req.method });
}

/** Opens an SSE stream on `res`, lets `write` fill it, then ends it and frees its slot, also when `write` fails. */
export async function serveStream(
  services: ApiServices,
  res: Response,
  slot: ConnectionSlot,
  write: (sse: SseWriter) => Promise<void>,
): Promise<void> {
  const sse = new SseWriter(res, services.config.SSE_KEEPALIVE_MS);
  try {
    await write(sse);
  } finally {
    sse.end();
    await slot.release().catch(() => undefined);
  }
}
