// GET /mcp: the session's event stream, or the resumption of an interrupted stream after Last-Event-ID (on any
// replica: the events are in Redis).
import type { Request, Response } from 'express';
import { ErrorCode, errorResponse } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import { acceptsEventStream, sendHttpError, toWireError } from '../responses.ts';
import { parseEventId } from '../sse.ts';
import { tooManyStreams } from '../stream-limit.ts';
import { streamAnswer, streamSession } from '../streams.ts';
import { openSession } from './session-gate.ts';
import { acquireStreamSlot, serveStream } from './sse-slots.ts';

export async function handleGet(services: ApiServices, req: Request, res: Response): Promise<void> {
  if (!acceptsEventStream(req.headers.accept)) {
    sendHttpError(res, 406, ErrorCode.InvalidRequest, 'Not Acceptable: a GET stream needs Accept: text/event-stream');
    return;
  }
  const session = (await openSession(services, req, res))?.session;
  if (!session) return;
  const lastEventId = req.headers['last-event-id'];
  const position = typeof lastEventId === 'string' && lastEventId !== '' ? parseEventId(lastEventId) : undefined;
  if (typeof lastEventId === 'string' && lastEventId !== '' && !position) {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, `Bad Request: Last-Event-ID '${lastEventId}' is not one of ours`);
    return;
  }
  const slot = await acquireStreamSlot(services, session, req);
  if (!slot) {
    const { code, message } = tooManyStreams(services);
    sendHttpError(res, 429, code, message);
    return;
  }
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  await serveStream(res, slot, async (sse) => {
    if (position?.kind === 'task') {
      await streamAnswer(services, session, position, sse, controller.signal).catch((error: unknown) => {
        sse.send(errorResponse(position.requestId, toWireError(error)) as unknown as Record<string, unknown>);
      });
    } else {
      await streamSession(services, session, position?.after, sse, controller.signal);
    }
  });
}
