// What a wire is: one MCP revision's whole HTTP life on /mcp, behind the shared transport (guards, CORS,
// authentication, the body). The table that picks one is ./index.ts; each wire is a folder named by its revision
// (rev2025-11-25/, rev2026-07-28/) that never imports another (scripts/check-imports.mjs).
import type { IncomingHttpHeaders } from 'node:http';
import type { Request, Response } from 'express';
import type { ApiServices } from '../context.ts';
import type { ReplyFormat } from '../responses.ts';
import type { ErrorTable } from './errors.ts';

/** The revisions served, each by its wire (the keys of ./index.ts's table). */
export type Revision = '2025-11-25' | '2026-07-28';

/** A parsed POST as the transport hands it to the wire that claims it. */
export interface PostedMessage {
  body: unknown;
  /** How the client takes an answer (its Accept header, checked by the transport). */
  format: ReplyFormat;
}

export interface Wire<Claim = unknown> {
  readonly revision: Revision;
  /**
   * Whether a POST is this wire's, judged by its body and headers (C26-COEX-2): what `post` needs of that judgement,
   * or undefined to leave it to the next older wire. The oldest wire claims what no newer one did.
   */
  claim(body: unknown, headers: IncomingHttpHeaders): Claim | undefined;
  post(services: ApiServices, claim: Claim, message: PostedMessage, req: Request, res: Response): Promise<void>;
  /** GET and DELETE /mcp: a session's stream and its end, on the wire that has sessions. */
  get?(services: ApiServices, req: Request, res: Response): Promise<void>;
  delete?(services: ApiServices, req: Request, res: Response): Promise<void>;
  /** What this revision says differently when a request fails. */
  readonly errors: ErrorTable<never>;
}
