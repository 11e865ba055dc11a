// GET /mcp: the session's event stream, or the resumption of an interrupted stream after Last-Event-ID (on any
// replica: the events are in Redis).
import type { Request, Response } from 'express';
import { ErrorCode, errorResponse } from '@mcp-tasks/protocol';
import { admit, isFailedLookup, noteFailedLookup } from '../../calls/admission.ts';
import type { Caller } from '../../calls/request.ts';
import type { ApiServices } from '../../context.ts';
import { acceptsEventStream, sendHttpError } from '../../responses.ts';
import { parseEventId } from '../../sse.ts';
import { tooManyStreams } from './stream-limit.ts';
import { streamAnswer, streamSession } from './streams.ts';
import { toWireError } from './errors.ts';
import { addressOf } from '../../request-origin.ts';
import { openSession } from './session-gate.ts';
import { acquireStreamSlot, serveStream } from './sse-slots.ts';

/** The method a resumed answer stream counts as: it reads the task's result, as tasks/result does. */
const RESUMED_LOOKUP = 'tasks/result';

export async function handleGet(services: ApiServices, req: Request, res: Response): Promise<void> {
  if (!acceptsEventStream(req.headers.accept)) {
    sendHttpError(res, 406, ErrorCode.InvalidRequest, 'Not Acceptable: a GET stream needs Accept: text/event-stream');
    return;
  }
  const lastEventId = req.headers['last-event-id'];
  const given = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined;
  const position = given !== undefined ? parseEventId(given) : undefined;
  // Resuming an answer stream names a task by id: a lookup, charged, throttled and audited as tasks/result is.
  const opened = await openSession(services, req, res, position?.kind === 'task' ? RESUMED_LOOKUP : undefined);
  if (!opened) return;
  const { session } = opened;
  if (given !== undefined && !position) {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, `Bad Request: Last-Event-ID '${given}' is not one of ours`);
    return;
  }
  const lookup: Caller | undefined =
    position?.kind === 'task'
      ? {
          owner: session.owner,
          address: addressOf(req),
          requestId: position.requestId,
          sessionId: session.sessionId,
          readsByCapability: false,
        }
      : undefined;
  if (lookup) {
    try {
      admit(services, lookup, RESUMED_LOOKUP, opened.admission);
    } catch (error) {
      const { code, message } = toWireError(error);
      sendHttpError(res, 429, code, message);
      return;
    }
  }
  const slot = await acquireStreamSlot(services, session, req);
  if (!slot) {
    const { code, message } = tooManyStreams(services);
    sendHttpError(res, 429, code, message);
    return;
  }
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  await serveStream(services, res, slot, async (sse) => {
    if (position?.kind === 'task' && lookup) {
      await streamAnswer(services, session, position, sse, controller.signal).catch(async (error: unknown) => {
        if (isFailedLookup(RESUMED_LOOKUP, error))
          await noteFailedLookup(services, lookup, RESUMED_LOOKUP, position.taskId);
        sse.send(errorResponse(position.requestId, toWireError(error)) as unknown as Record<string, unknown>);
      });
    } else {
      await streamSession(services, session, position?.after, sse, controller.signal);
    }
  });
}
