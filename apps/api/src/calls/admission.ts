// What every task operation passes, on both wires: the rate limits (T-SEC-3) and the throttling of failed task
// lookups; every refusal and every failed lookup leaves an audit record (T-AUDIT-1).
import {
  audit,
  AuditEvent,
  RateScope,
  RequestRefusedError,
  type RateVerdict,
  type RequestOpening,
} from '@mcp-tasks/engine';
import { CallGoneError, LimitExceededError, TaskNotFoundError } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import type { Caller } from './request.ts';

/** Methods that count against the per-principal and per-address rate limits. */
const TASK_OPERATIONS = new Set(['tools/call', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);
/**
 * Methods that name a task by id: also refused while the caller has too many failed lookups, and counted when
 * the id is unknown (tasks/update of 2026-07-28 names its task as tasks/get does).
 */
const LOOKUPS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update']);

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

/**
 * What a request of `method` counts against (RateLimiter.charge): task operations and lookups pay, the rest not. A
 * `subscriptions/listen` that names task ids looks each one up: it pays as a lookup, and is refused as one while the
 * caller's failed-lookup budget is spent (T-SEC-3). So does a tools/call of a handle tool (`handleTools`: their names,
 * calls/handles.ts), which names its task by id as tasks/get does.
 */
export function rateChargeOf(
  method: string,
  params?: Record<string, unknown>,
  handleTools?: { has(name: string): boolean },
): 'free' | 'operation' | 'lookup' {
  if (LOOKUPS.has(method) || (method === 'subscriptions/listen' && namesTasks(params))) return 'lookup';
  if (method === 'tools/call' && callsHandleTool(params, handleTools)) return 'lookup';
  return TASK_OPERATIONS.has(method) ? 'operation' : 'free';
}

function callsHandleTool(
  params: Record<string, unknown> | undefined,
  handleTools: { has(name: string): boolean } | undefined,
): boolean {
  const name = params?.['name'];
  return handleTools !== undefined && typeof name === 'string' && handleTools.has(name);
}

/** The task id a lookup names: `taskId` of a task method, `arguments.taskId` of a handle tool's call. */
export function lookedUpTaskId(method: string, params: Record<string, unknown> | undefined): unknown {
  if (method !== 'tools/call') return params?.['taskId'];
  const args = params?.['arguments'];
  return typeof args === 'object' && args !== null ? (args as Record<string, unknown>)['taskId'] : undefined;
}

function namesTasks(params: Record<string, unknown> | undefined): boolean {
  const notifications = params?.['notifications'];
  return typeof notifications === 'object' && notifications !== null && 'taskIds' in notifications;
}

/**
 * Before a use case does anything but read when its request's opening was left to a method's script that has not
 * run (RequestOpening): opens it now, and stops the use case if that refuses it (the wire then answers the refusal).
 */
export async function ensureOpened(opening: RequestOpening | undefined): Promise<void> {
  if (!opening) return;
  const opened = await opening.settle();
  if (opened !== 0) throw new RequestRefusedError(opened);
}

/** Throws the refusal of a request that was over a rate limit (audited), counted as it was charged. */
export function admit(
  services: ApiServices,
  caller: Caller,
  method: string,
  verdict: RateVerdict,
): asserts verdict is Extract<RateVerdict, { ok: true }> {
  if (verdict.ok) return;
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'rate_limited',
    scope: verdict.scope,
    principal: caller.owner,
    ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
    requestId: caller.requestId,
    address: caller.address,
    method,
  });
  throw rateLimitError(verdict, services.security.rates.limits.windowMs);
}

/** The refusal of a request over a rate limit: what was counted, the limit and its variable, and when to retry. */
export function rateLimitError(verdict: Extract<RateVerdict, { ok: false }>, windowMs: number): LimitExceededError {
  const { what, variable } = SCOPE_TEXT[verdict.scope];
  return new LimitExceededError(
    verdict.scope,
    verdict.limit,
    `Rate limit exceeded: more than ${verdict.limit} ${what} in ${windowMs} ms (${variable}); ` +
      `retry after ${verdict.retryAfterMs} ms`,
    { windowMs, retryAfterMs: verdict.retryAfterMs },
  );
}

/**
 * Whether a failure of a lookup is "not found" (unknown, expired or someone else's id: one answer for each). A
 * tools/call is a lookup only when it called a handle tool (`handleTool`): no other tool call answers not-found.
 */
export function isFailedLookup(method: string, error: unknown, handleTool = false): boolean {
  const lookup = LOOKUPS.has(method) || (method === 'tools/call' && handleTool);
  return lookup && (error instanceof TaskNotFoundError || error instanceof CallGoneError);
}

/**
 * After a lookup answered "not found" (the same answer and the same work for each case, T-SEC-1), counts it against
 * the caller's failed-lookup budget and audits it; whether the budget is spent now (a request that looks up several
 * ids stops there).
 */
export async function noteFailedLookup(
  services: ApiServices,
  caller: Caller,
  method: string,
  taskId: unknown,
): Promise<boolean> {
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'task_not_found',
    principal: caller.owner,
    ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
    requestId: caller.requestId,
    address: caller.address,
    method,
    ...(typeof taskId === 'string' ? { taskId: taskId.slice(0, 128) } : {}),
  });
  return services.security.rates.recordFailedLookup(caller.owner, caller.address).catch((failure: unknown) => {
    services.log.warn('could not count a failed lookup', { error: String(failure) });
    return false;
  });
}
