// Who may use a session: every request but initialize names one in Mcp-Session-Id. The gate reads it (restarting
// its idle timer), charges the request against the rate limits in the same round trip, answers 400/404 for what
// it cannot admit, and audits every refusal with the caller's address.
import type { Request, Response } from 'express';
import { SecurityEvent, type RateVerdict, type Session } from '@mcp-tasks/engine';
import type { DeferredOpening } from './context.ts';
import { ErrorCode, SUPPORTED_PROTOCOL_VERSIONS } from '@mcp-tasks/protocol';
import { principalOwner } from '../../auth.ts';
import type { ApiServices } from '../../context.ts';
import { sendHttpError } from '../../responses.ts';
import { rateChargeOf } from '../../calls/admission.ts';
import { addressOf, principalOf } from '../../request-origin.ts';
import { rejected } from '../../transport/rejected.ts';

export const SESSION_HEADER = 'mcp-session-id';
const VERSION_HEADER = 'mcp-protocol-version';
/** Longer ids are not ours: answered as unknown without a Redis read. */
const MAX_SESSION_ID_LENGTH = 128;

export interface OpenedSession {
  session: Session;
  /** The rate-limit verdict on a request of `method` (always ok for what is not a task operation). */
  admission: RateVerdict;
  /** Set when the request's opening was left to its method's script (`admission` is then not reached yet). */
  opening?: DeferredOpening;
}

/**
 * The request's session, or an HTTP error already sent: 400 without the header, 404 for an unknown session. A
 * request of `method` is counted against the rate limits in the same round trip (calls/admission.ts decides which).
 * With `deferrable`, a session this replica knows is not touched here: the request's opening is left to the
 * method's own script (`opening`), and the dispatcher answers 404 or a rate-limit error if that refuses it.
 * `address` is the caller's (addressOf), when the caller has it already; `params` the request's (a tools/call of a
 * handle tool is charged as a lookup).
 */
export async function openSession(
  services: ApiServices,
  req: Request,
  res: Response,
  method?: string,
  deferrable = false,
  address = addressOf(req),
  params?: Record<string, unknown>,
): Promise<OpenedSession | undefined> {
  const version = req.headers[VERSION_HEADER];
  if (typeof version === 'string' && !(SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
    sendHttpError(
      res,
      400,
      ErrorCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version '${version}' (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
    return undefined;
  }
  const sessionId = req.headers[SESSION_HEADER];
  if (typeof sessionId !== 'string' || sessionId === '') {
    sendHttpError(
      res,
      400,
      ErrorCode.InvalidRequest,
      'Bad Request: Mcp-Session-Id header is required; send initialize first',
    );
    return undefined;
  }
  const principal = principalOf(res);
  // The owner the session must have: with authentication, the caller's; without, the session is its own owner.
  const owner = principal !== undefined ? principalOwner(principal) : `session:${sessionId}`;
  const rates = services.security.rates;
  const charge = rates.charge(
    owner,
    address,
    method === undefined
      ? 'free'
      : rateChargeOf(method, params, services.handles.enabled ? services.handles.names : undefined),
  );
  const opening =
    deferrable && sessionId.length <= MAX_SESSION_ID_LENGTH
      ? services.sessions.deferOpening(sessionId, charge)
      : undefined;
  // Another principal's session is read and refused below, as any session this replica does not know.
  if (opening && (principal === undefined || opening.session.owner === principalOwner(principal))) {
    return { session: opening.session, admission: { ok: true }, opening: { opening, charge } };
  }
  const touched =
    sessionId.length <= MAX_SESSION_ID_LENGTH ? await services.sessions.touch(sessionId, charge) : undefined;
  const session = touched?.session;
  // With authentication, another principal's session is answered exactly like an unknown one (T-SEC-1).
  const foreign = session !== undefined && principal !== undefined && session.owner !== principalOwner(principal);
  if (!session || foreign) {
    if (foreign) {
      services.security.rates.count(SecurityEvent.ForeignSession).catch(() => undefined);
      rejected(services, req, { reason: 'foreign_session', sessionId, principal: principalOwner(principal) });
    }
    sessionNotFound(res);
    return undefined;
  }
  return { session, admission: rates.verdictOf(charge, touched.refused) };
}

/**
 * The session DELETE may end, or undefined with the HTTP error sent. Only the principal that created a session may
 * end it; anyone else gets the unknown-session answer. Without authentication the id is the only credential.
 */
export async function sessionToEnd(services: ApiServices, req: Request, res: Response): Promise<string | undefined> {
  const sessionId = req.headers[SESSION_HEADER];
  if (typeof sessionId !== 'string' || sessionId === '') {
    sendHttpError(res, 400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required');
    return undefined;
  }
  const principal = principalOf(res);
  if (principal === undefined) return sessionId;
  const session = sessionId.length <= MAX_SESSION_ID_LENGTH ? await services.sessions.get(sessionId) : undefined;
  if (session?.owner === principalOwner(principal)) return sessionId;
  if (session) rejected(services, req, { reason: 'foreign_session', sessionId, principal: principalOwner(principal) });
  sendHttpError(res, 404, ErrorCode.SessionNotFound, 'Session not found');
  return undefined;
}

/** Answers a request whose session is gone (also when that is found out by the method's script). */
export function sessionNotFound(res: Response): void {
  sendHttpError(
    res,
    404,
    ErrorCode.SessionNotFound,
    'Session not found: it expired or was deleted; initialize a new one',
  );
}
