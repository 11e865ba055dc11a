// The wires, one per MCP revision, in one table keyed by revision: adding a revision is a folder (rev<date>/, its
// index.ts a Wire) and a row here. A POST goes to the newest wire that claims it; GET and DELETE to the wire that
// has sessions.
import type { Request, Response } from 'express';
import type { JsonRpcErrorObject } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import { toWireError as mapped, wireErrorOf as mappedOf } from './errors.ts';
import { wire as rev2025_11_25 } from './rev2025-11-25/index.ts';
import { wire as rev2026_07_28 } from './rev2026-07-28/index.ts';
import type { PostedMessage, Revision, Wire } from './wire.ts';

export type { Revision } from './wire.ts';

export const WIRES: { readonly [R in Revision]: Wire } = {
  '2025-11-25': rev2025_11_25,
  '2026-07-28': rev2026_07_28,
};

/** The wires newest first: the order in which they are asked to claim a POST. */
const NEWEST_FIRST: readonly Wire[] = Object.values(WIRES).sort((a, b) => b.revision.localeCompare(a.revision));

/** Serves a parsed POST on the newest wire that claims it; the oldest wire claims whatever is left. */
export async function servePost(
  services: ApiServices,
  message: PostedMessage,
  req: Request,
  res: Response,
): Promise<void> {
  for (const wire of NEWEST_FIRST) {
    const claim = wire.claim(message.body, req.headers);
    if (claim !== undefined) return wire.post(services, claim, message, req, res);
  }
  throw new Error('No wire claims the message: the oldest wire must claim everything');
}

/** The wire that serves GET or DELETE /mcp (the one with sessions), if any. */
export function wireServing(method: 'get' | 'delete'): Wire | undefined {
  return NEWEST_FIRST.find((wire) => wire[method] !== undefined);
}

/** The JSON-RPC error a failure is answered with on `revision`'s wire, or undefined for an unforeseen failure. */
export function wireErrorOf(
  error: unknown,
  revision: Revision,
  context?: Record<string, unknown>,
): JsonRpcErrorObject | undefined {
  return mappedOf(error, WIRES[revision].errors, context as never);
}

/** As wireErrorOf, with the internal error for anything unforeseen. */
export function toWireError(error: unknown, revision: Revision, context?: Record<string, unknown>): JsonRpcErrorObject {
  return mapped(error, WIRES[revision].errors, context as never);
}
