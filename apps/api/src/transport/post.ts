// POST /mcp, what every wire shares: the client must take JSON or SSE (406), the body must be one JSON-RPC message
// (400); then the wire table (../wires/index.ts) hands it to the wire of its revision.
import type { Request, Response } from 'express';
import { ErrorCode } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import { replyFormat, sendHttpError } from '../responses.ts';
import { servePost } from '../wires/index.ts';
import { parseBody } from './body.ts';

export async function handlePost(services: ApiServices, req: Request, res: Response): Promise<void> {
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
  await servePost(services, { body: message.value, format }, req, res);
}
