// POST /tasks/:taskId/events/:name — where another system sends an event to a task whose tool waits for it
// (ctx.waitForEvent; docs/durable-execution.md, "Waits"). Authenticated by the task's own principal (its API key or
// JWT, as on /mcp), by the operators' ADMIN_TOKEN, or by the task's callback token; another principal's request gets
// the answer of an unknown task. The event's data is the body's `data` (any JSON; absent: none).
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { audit, AuditEvent, verifyCallbackToken, type RateLimiter, type TaskSignals } from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';
import {
  InvalidInputError,
  InvalidStateError,
  isPlainObject,
  LimitExceededError,
  TaskNotFoundError,
} from '@mcp-tasks/protocol';
import { principalOwner, type Authenticator } from './auth.ts';
import { rateLimitError } from './calls/admission.ts';
import { ANONYMOUS_OWNER_PREFIX } from './calls/tasks.ts';
import { addressOf } from './request-origin.ts';

export const SIGNALS_PATH = '/tasks/:taskId/events/:name';

export interface SignalDeps {
  signals: TaskSignals;
  auth: Authenticator;
  rates: RateLimiter;
  /** ADMIN_TOKEN: an operator may send any task an event. */
  adminToken?: string | undefined;
  /** CALLBACK_SECRET: a task's callback token sends it events. */
  callbackSecret?: string | undefined;
  maxBodyBytes: number;
  audit: Logger;
  log: Logger;
}

/** Who sends: an owner, whose tasks only it may signal, or an operator or callback token (`owner` undefined). */
type Sender =
  { owner: string; as: 'principal' | 'session' | 'address' } | { owner: undefined; as: 'operator' | 'callback' };

export function signalsRouter(deps: SignalDeps): Router {
  const router = express.Router();
  // A body is optional (an event without data); whatever its type, it is read as JSON when there is one.
  const body = express.json({ limit: deps.maxBodyBytes, type: () => true });
  router.post(SIGNALS_PATH, body, (req, res, next) => {
    handleSignal(deps, req, res).catch(next);
  });
  router.all(SIGNALS_PATH, (_req, res) => {
    res.set('Allow', 'POST');
    res.status(405).json({ error: 'method_not_allowed', message: 'Use POST' });
  });
  router.use(
    '/tasks',
    (error: { status?: number; message?: string }, _req: Request, res: Response, next: (e: unknown) => void) => {
      if (res.headersSent) return next(error);
      const status = error.status === 413 ? 413 : 400;
      res.status(status).json({ error: 'invalid_payload', message: error.message ?? 'Unreadable body' });
    },
  );
  return router;
}

async function handleSignal(deps: SignalDeps, req: Request, res: Response): Promise<void> {
  const taskId = String(req.params['taskId']);
  const name = String(req.params['name']);
  const sender = await senderOf(deps, req, taskId);
  if (!sender) {
    res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
    res.status(401).json({ error: 'invalid_token', message: 'Send Authorization: Bearer <token> with a valid token' });
    return;
  }
  const address = addressOf(req);
  const verdict = await deps.rates.admit(deps.rates.charge(sender.owner ?? 'operator', address, 'lookup'));
  if (!verdict.ok) {
    const error = rateLimitError(verdict, deps.rates.limits.windowMs);
    res.set('Retry-After', String(Math.ceil(verdict.retryAfterMs / 1000)));
    res.status(429).json({ error: 'rate_limited', message: error.message });
    return;
  }
  const payload: unknown = req.body;
  if (payload !== undefined && !isPlainObject(payload)) {
    res.status(400).json({ error: 'invalid_payload', message: 'The body is a JSON object: {"data": <any JSON>}' });
    return;
  }
  const data = isPlainObject(payload) && 'data' in payload ? JSON.stringify(payload['data']) : undefined;
  try {
    const sent = await deps.signals.send({
      taskId,
      name,
      ...(data !== undefined ? { data } : {}),
      ...(sender.owner !== undefined ? { owner: sender.owner } : {}),
    });
    audit(deps.audit, AuditEvent.TaskSignalled, {
      principal: sender.owner ?? sender.as,
      taskId,
      event: name,
      delivered: sent.delivered,
      address,
    });
    res.status(202).json(sent);
  } catch (error) {
    answerRefusal(deps, res, error, { taskId, sender, address });
  }
}

function answerRefusal(
  deps: SignalDeps,
  res: Response,
  error: unknown,
  context: { taskId: string; sender: Sender; address: string },
): void {
  if (error instanceof TaskNotFoundError) {
    // Unknown, expired, or another principal's: one answer (T-SEC-1), counted as a failed lookup.
    audit(deps.audit, AuditEvent.AccessRejected, {
      reason: 'task_not_found',
      principal: context.sender.owner ?? context.sender.as,
      taskId: context.taskId.slice(0, 128),
      address: context.address,
      method: 'events',
    });
    deps.rates.recordFailedLookup(context.sender.owner ?? 'operator', context.address).catch(() => false);
    res
      .status(404)
      .json({ error: 'task_not_found', message: 'No such task (it expired or was deleted, or never existed)' });
    return;
  }
  if (error instanceof InvalidStateError) {
    res.status(409).json({ error: 'task_ended', status: error.current, message: error.message });
    return;
  }
  if (error instanceof LimitExceededError) {
    const status = error.limit === 'EVENT_MAX_BYTES' ? 413 : 429;
    res.status(status).json({ error: 'limit_exceeded', limit: error.limit, max: error.max, message: error.message });
    return;
  }
  if (error instanceof InvalidInputError) {
    res.status(400).json({ error: 'invalid_name', message: error.message });
    return;
  }
  throw error;
}

/**
 * The sender: the operators' token, the task's callback token, else the request's principal (with authentication)
 * or, without it, its MCP session (`Mcp-Session-Id`) or its address, as the tasks it created are bound. Undefined:
 * authentication is on and the request proves no principal.
 */
async function senderOf(deps: SignalDeps, req: Request, taskId: string): Promise<Sender | undefined> {
  const header = req.headers.authorization;
  const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
  if (token !== undefined) {
    if (deps.adminToken !== undefined && sameSecret(token, deps.adminToken))
      return { owner: undefined, as: 'operator' };
    if (deps.callbackSecret !== undefined && verifyCallbackToken(deps.callbackSecret, token, taskId).ok) {
      return { owner: undefined, as: 'callback' };
    }
  }
  if (deps.auth.enabled) {
    const outcome = await deps.auth.authenticate(header);
    return outcome.ok ? { owner: principalOwner(outcome.principal), as: 'principal' } : undefined;
  }
  const session = req.headers['mcp-session-id'];
  if (typeof session === 'string' && session !== '') return { owner: `session:${session}`, as: 'session' };
  return { owner: `${ANONYMOUS_OWNER_PREFIX}${addressOf(req)}`, as: 'address' };
}

/** Fixed-length digests, so the comparison takes the same time whatever the lengths. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}
