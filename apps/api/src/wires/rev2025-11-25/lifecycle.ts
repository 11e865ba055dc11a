// initialize: the one 2025-11-25 method that opens a session (post.ts calls it before any session exists).
import { randomUUID } from 'node:crypto';
import { audit, AuditEvent, SessionCap, type RateCharge, type Session, type SessionAdmission } from '@mcp-tasks/engine';
import {
  boundedClientInfo,
  InitializeParamsSchema,
  LimitExceededError,
  negotiateProtocolVersion,
  parseParams,
  serverCapabilities,
  usedClientCapabilities,
} from '@mcp-tasks/protocol';
import { principalOwner } from '../../auth.ts';
import { rateLimitError } from '../../calls/admission.ts';
import type { ApiServices } from '../../context.ts';

import { SERVER_INFO } from '../../server-info.ts';

/**
 * Creates the session in Redis and answers the negotiated version and our capabilities; -32029 when the principal
 * or the address initializes too often or already holds too many sessions.
 */
export async function initialize(
  params: Record<string, unknown> | undefined,
  services: ApiServices,
  /** The authenticated principal; without authentication the session is its own owner. */
  principal: string | undefined,
  /** The client's address (per-address limits, audit). */
  address: string,
): Promise<{ session: Session; result: Record<string, unknown> }> {
  const parsed = parseParams(InitializeParamsSchema, params, 'initialize');
  const protocolVersion = negotiateProtocolVersion(parsed.protocolVersion);
  const sessionId = randomUUID();
  const session: Session = {
    sessionId,
    protocolVersion,
    // What the runner acts on and nothing else: about a kilobyte in Redis however large the declaration, read back
    // by every later request of the session.
    clientCapabilities: usedClientCapabilities(parsed.capabilities),
    clientInfo: boundedClientInfo(parsed.clientInfo),
    createdAt: Date.now(),
    // The binding of its tasks (invariant 5, docs/architecture.md): the token's principal, else the session itself.
    owner: principal !== undefined ? principalOwner(principal) : `session:${sessionId}`,
  };
  const owner = principal !== undefined ? session.owner : undefined;
  const charge = services.security.rates.chargeInitialize(owner, address);
  const admission = await services.sessions.create(session, { principal: owner, address, charge });
  if (!admission.ok) refuse(services, admission, charge, { principal: owner, address });
  return {
    session,
    result: {
      protocolVersion,
      capabilities: serverCapabilities(protocolVersion, { listTasks: services.config.TASKS_LIST_ENABLED }),
      serverInfo: SERVER_INFO,
      instructions:
        'Long-running tools run as MCP tasks on background workers. Call them with params.task, then poll ' +
        'tasks/get and fetch tasks/result.',
    },
  };
}

const CAP_TEXT: Record<SessionCap, { who: string; variable: string }> = {
  [SessionCap.PerPrincipal]: { who: 'this requestor', variable: 'MAX_SESSIONS_PER_PRINCIPAL' },
  [SessionCap.PerAddress]: { who: 'this address', variable: 'MAX_SESSIONS_PER_ADDRESS' },
};

/** Audits a refused initialize and throws its -32029 (the script already counted it for /metrics). */
function refuse(
  services: ApiServices,
  admission: Exclude<SessionAdmission, { ok: true }>,
  charge: RateCharge,
  who: { principal: string | undefined; address: string },
): never {
  const fields = { method: 'initialize', address: who.address, ...(who.principal ? { principal: who.principal } : {}) };
  if ('cap' in admission) {
    const { who: holder, variable } = CAP_TEXT[admission.cap];
    audit(services.security.audit, AuditEvent.AccessRejected, { reason: 'too_many_sessions', ...fields });
    throw new LimitExceededError(
      admission.cap,
      admission.max,
      `Too many sessions: ${holder} already holds ${admission.max} live sessions (${variable}); end unused ones ` +
        `with DELETE, or wait until they expire (SESSION_IDLE_TTL_MS after their last request)`,
    );
  }
  const verdict = services.security.rates.verdictOf(charge, admission.refusedBucket);
  if (verdict.ok) throw new Error(`session refused by bucket ${admission.refusedBucket}, which has no limit`);
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'rate_limited',
    scope: verdict.scope,
    ...fields,
  });
  throw rateLimitError(verdict, services.security.rates.limits.windowMs);
}
