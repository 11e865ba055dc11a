// POST /callbacks/tasks/:taskId — where an external system reports on work it does for a task (progress, then one
// final result or failure). Authenticated by the task's callback token only (no MCP session): see
// docs/external-tools.md for the payloads and answers.
import { createHash } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { verifyCallbackToken, type ExternalTasks, type TaskStore } from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';
import {
  CallbackPayloadSchema,
  describeIssues,
  isTerminal,
  settleWithExternalFailure,
  settleWithResult,
} from '@mcp-tasks/protocol';

export interface CallbackDeps {
  secret: string;
  maxBodyBytes: number;
  store: TaskStore;
  external: ExternalTasks;
  log: Logger;
}

export function callbacksRouter(deps: CallbackDeps): Router {
  const router = express.Router();
  // The token first: a body is read and parsed only for a caller that holds one for this task.
  router.post(
    '/callbacks/tasks/:taskId',
    requireCallbackToken(deps),
    express.json({ limit: deps.maxBodyBytes }),
    (req, res, next) => {
      handleCallback(deps, req, res).catch(next);
    },
  );
  router.all('/callbacks/tasks/:taskId', (_req, res) => {
    res.set('Allow', 'POST');
    res.status(405).json({ error: 'method_not_allowed', message: 'Use POST' });
  });
  // Body errors (malformed JSON, too large) answer JSON too, not express's HTML page.
  router.use(
    '/callbacks',
    (error: { status?: number; message?: string }, _req: Request, res: Response, next: (e: unknown) => void) => {
      if (res.headersSent) return next(error);
      const status = error.status === 413 ? 413 : 400;
      res.status(status).json({ error: 'invalid_payload', message: error.message ?? 'Unreadable body' });
    },
  );
  return router;
}

/** Answers 401 unless the request carries this task's callback token; keeps its expiry for the handler. */
function requireCallbackToken(deps: CallbackDeps) {
  return (req: Request, res: Response, next: NextFunction) => {
    const taskId = String(req.params['taskId']);
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
    const verdict = verifyCallbackToken(deps.secret, token, taskId);
    if (!verdict.ok) {
      deps.log.warn('callback rejected', { taskId, problem: verdict.problem });
      // The body is not read: the connection is closed after the answer rather than drained.
      res.set({ 'WWW-Authenticate': 'Bearer error="invalid_token"', Connection: 'close' });
      res.status(401).json({ error: 'invalid_token', message: tokenMessage(verdict.problem) });
      return;
    }
    (res.locals as CallbackLocals).expiresAt = verdict.expiresAt;
    next();
  };
}

interface CallbackLocals {
  /** When the request's token expires (epoch ms): a final report's claim lives as long. */
  expiresAt: number;
}

async function handleCallback(deps: CallbackDeps, req: Request, res: Response): Promise<void> {
  const taskId = String(req.params['taskId']);
  const { expiresAt } = res.locals as CallbackLocals;
  const parsed = CallbackPayloadSchema.safeParse(req.body);
  if (!parsed.success) {
    res.status(400).json({ error: 'invalid_payload', message: describeIssues(parsed.error) });
    return;
  }
  const record = await deps.store.get(taskId);
  if (!record) {
    res.status(404).json({ error: 'task_not_found', message: 'The task expired or was deleted' });
    return;
  }
  const payload = parsed.data;
  if (payload.type === 'progress') {
    if (isTerminal(record.status)) {
      res.status(409).json({ error: 'task_ended', status: record.status, message: `The task is ${record.status}` });
      return;
    }
    await deps.external.progress(record, payload);
    res.status(202).json({ status: record.status });
    return;
  }

  // The final report: one per task. A retry of the same report is answered as success and changes nothing.
  const digest = createHash('sha256').update(JSON.stringify(req.body)).digest('hex');
  const claim = await deps.external.claimFinal(taskId, digest, expiresAt);
  if (claim === 'conflict') {
    res.status(409).json({
      error: 'conflict',
      status: record.status,
      message: 'A different final report was already accepted for this task',
    });
    return;
  }
  const settlement =
    payload.type === 'result'
      ? settleWithResult(payload.result)
      : settleWithExternalFailure(record.tool, payload.message);
  const moved = await deps.store.settle(record, settlement);
  if (moved.ok) {
    deps.log.info('task settled by external callback', { taskId, tool: record.tool, status: settlement.status });
    res.status(200).json({ status: settlement.status });
    return;
  }
  if (moved.reason === 'missing') {
    res.status(404).json({ error: 'task_not_found', message: 'The task expired or was deleted' });
    return;
  }
  if (claim === 'same') {
    res.status(200).json({ status: moved.current, duplicate: true });
    return;
  }
  // First report, but the task ended otherwise first (cancelled): the external system should stop.
  res.status(409).json({ error: 'task_ended', status: moved.current, message: `The task is ${moved.current}` });
}

function tokenMessage(problem: 'malformed' | 'signature' | 'expired'): string {
  switch (problem) {
    case 'malformed':
      return 'Authorization: Bearer <callback token> is missing or malformed';
    case 'signature':
      return 'The callback token is not valid for this task';
    case 'expired':
      return 'The callback token has expired';
  }
}
