// Rate limits on task operations (T-SEC-3) and the throttling of failed task lookups, applied by the dispatcher
// around the task methods; every refusal and every failed lookup leaves an audit record (T-AUDIT-1).
import { audit, AuditEvent, RateScope, RequestRefusedError, type RateVerdict } from '@mcp-tasks/engine';
import { ErrorCode, ProtocolError, TaskNotFoundError } from '@mcp-tasks/protocol';
import type { RequestContext } from './context.ts';
import { PlainCallGoneError } from './plain-calls.ts';

/** Methods that count against the per-principal and per-address rate limits. */
const TASK_OPERATIONS = new Set(['tools/call', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);
/** Methods that look a task up by id: also refused while the caller has too many failed lookups. */
const LOOKUPS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel']);

const SCOPE_TEXT: Record<RateScope, { what: string; variable: string }> = {
  [RateScope.Principal]: { what: 'task operations by this requestor', variable: 'RATE_LIMIT_PER_PRINCIPAL' },
  [RateScope.Address]: { what: 'task operations from this address', variable: 'RATE_LIMIT_PER_ADDRESS' },
  [RateScope.FailedLookupsOfPrincipal]: {
    what: 'lookups of unknown task ids by this requestor',
    variable: 'RATE_LIMIT_FAILED_LOOKUPS',
  },
  [RateScope.FailedLookupsOfAddress]: {
    what: 'lookups of unknown task ids from this address',
    variable: 'RATE_LIMIT_FAILED_LOOKUPS_PER_ADDRESS',
  },
  [RateScope.InitializeOfPrincipal]: {
    what: 'initialize requests by this requestor',
    variable: 'RATE_LIMIT_INITIALIZE_PER_PRINCIPAL',
  },
  [RateScope.InitializeOfAddress]: {
    what: 'initialize requests from this address',
    variable: 'RATE_LIMIT_INITIALIZE_PER_ADDRESS',
  },
};

/** What a request of `method` counts against (RateLimiter.charge): task operations and lookups pay, the rest not. */
export function rateChargeOf(method: string): 'free' | 'operation' | 'lookup' {
  if (LOOKUPS.has(method)) return 'lookup';
  return TASK_OPERATIONS.has(method) ? 'operation' : 'free';
}

/** What the guards read of a request: a JSON-RPC request's context, or a GET stream's. */
export type GuardContext = Pick<RequestContext, 'services' | 'session' | 'address' | 'requestId' | 'log'>;

/**
 * Before a handler does anything but read when its request's opening was left to a method's script that has not run
 * (RequestOpening): opens it now, and stops the handler if that refuses it (the dispatcher then answers the refusal).
 */
export async function ensureOpened(context: Pick<RequestContext, 'opening'>): Promise<void> {
  if (!context.opening) return;
  const opened = await context.opening.opening.settle();
  if (opened !== 0) throw new RequestRefusedError(opened);
}

/** Throws -32029 when the request was over a rate limit (counted as its session was read, RateLimiter.charge). */
export function admitTaskOperation(method: string, context: GuardContext & Pick<RequestContext, 'admission'>): void {
  const { services, session, address, admission: verdict } = context;
  if (verdict.ok) return;
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'rate_limited',
    scope: verdict.scope,
    principal: session.owner,
    sessionId: session.sessionId,
    requestId: context.requestId,
    address,
    method,
  });
  throw rateLimitError(verdict, services.security.rates.limits.windowMs);
}

/** The -32029 of a refused request: what was counted, the limit and its variable, and when to retry. */
export function rateLimitError(verdict: Extract<RateVerdict, { ok: false }>, windowMs: number): ProtocolError {
  const { what, variable } = SCOPE_TEXT[verdict.scope];
  return new ProtocolError(
    ErrorCode.LimitExceeded,
    `Rate limit exceeded: more than ${verdict.limit} ${what} in ${windowMs} ms (${variable}); ` +
      `retry after ${verdict.retryAfterMs} ms`,
    { limit: verdict.scope, max: verdict.limit, windowMs, retryAfterMs: verdict.retryAfterMs },
  );
}

/**
 * After a lookup answered "not found" (unknown, expired or someone else's id: the same answer and the same work
 * for each, T-SEC-1), counts it against the caller's failed-lookup budget and audits it.
 */
export async function noteFailedLookup(
  method: string,
  params: Record<string, unknown> | undefined,
  error: ProtocolError,
  context: GuardContext,
): Promise<void> {
  const missed = error instanceof TaskNotFoundError || error instanceof PlainCallGoneError;
  if (!LOOKUPS.has(method) || !missed) return;
  const { services, session, address } = context;
  const taskId = params?.['taskId'];
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'task_not_found',
    principal: session.owner,
    sessionId: session.sessionId,
    requestId: context.requestId,
    address,
    method,
    ...(typeof taskId === 'string' ? { taskId: taskId.slice(0, 128) } : {}),
  });
  await services.security.rates.recordFailedLookup(session.owner, address).catch((failure: unknown) => {
    context.log.warn('could not count a failed lookup', { error: String(failure) });
  });
}
