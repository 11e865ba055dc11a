// Who sends a request, as both wires read it: the principal its credentials proved, and its address.
import type { Request, Response } from 'express';

/** The authenticated principal of the request (set by authGuard), undefined without authentication. */
export function principalOf(res: Response): string | undefined {
  const principal: unknown = res.locals['principal'];
  return typeof principal === 'string' ? principal : undefined;
}

export function addressOf(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}
