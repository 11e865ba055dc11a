// DELETE /mcp: the client ends its session (204); an unknown or foreign session is 404.
import type { Request, Response } from 'express';
import { ErrorCode } from '@mcp-tasks/protocol';
import type { ApiServices } from '../../context.ts';
import { sendHttpError } from '../../responses.ts';
import { sessionToEnd } from './session-gate.ts';

export async function handleDelete(services: ApiServices, req: Request, res: Response): Promise<void> {
  const sessionId = await sessionToEnd(services, req, res);
  if (sessionId === undefined) return;
  if (!(await services.sessions.delete(sessionId))) {
    sendHttpError(res, 404, ErrorCode.SessionNotFound, 'Session not found');
    return;
  }
  services.log.info('session deleted', { sessionId });
  res.status(204).end();
}
