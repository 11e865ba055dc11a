// The operators' dashboard under /admin, behind ADMIN_TOKEN (Bearer, or Basic with the token as password): a task
// view in MCP terms (HTML page + the JSON it reads) and bull-board for the BullMQ queue, read-only so that nobody
// moves a job behind the back of its task record. Without ADMIN_TOKEN nothing is mounted (404).
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import {
  operatorInspection,
  operatorTask,
  TOOL_QUEUE_NAME,
  type ActivityRecorder,
  type TaskAdmin,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { ownerLabel, type Logger } from '@mcp-tasks/runtime';
import { TASK_STATUSES, TaskKind, ProtocolError, type TaskStatus } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { z } from 'zod';
import { assetRoutes } from './admin-assets.ts';
import { chartRoutes } from './admin-charts.ts';
import { taskRoutes, type OperatorActions } from './admin-task.ts';
import { rebindingGuard } from './http-guards.ts';

export const ADMIN_PATH = '/admin';

export interface AdminOptions {
  token: string;
  admin: TaskAdmin;
  queue: Queue<ToolJobData>;
  bindHost: string;
  allowedOrigins: readonly string[];
  /** The figures of the charts (activity.ts). */
  activity: ActivityRecorder;
  /** Takes a queue-depth sample for the charts (also done every 15 s while the api runs). */
  sampleDepth: () => Promise<void>;
  /** Where operators' cancels and retries are audited. */
  audit: Logger;
  actions: OperatorActions;
}

export { operatorActions } from './admin-task.ts';

const ListQuerySchema = z.object({
  status: z
    .string()
    .optional()
    .transform((value) => (value ? value.split(',').filter(Boolean) : []))
    .pipe(z.array(z.enum(TASK_STATUSES as [TaskStatus, ...TaskStatus[]]))),
  tool: z.string().max(256).optional(),
  owner: z.string().max(512).optional(),
  kind: z.enum([TaskKind.Task, TaskKind.PlainToolCall]).optional(),
  cursor: z.string().max(1024).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export async function adminRouter(options: AdminOptions): Promise<Router> {
  const router = express.Router();
  router.use(ADMIN_PATH, rebindingGuard({ bindHost: options.bindHost, allowedOrigins: options.allowedOrigins }));
  router.use(ADMIN_PATH, requireAdminToken(options.token), (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });

  router.use(assetRoutes(ADMIN_PATH)); // the pages, their styles and scripts: files in admin-assets/
  router.use(taskRoutes(ADMIN_PATH, options.actions, options.audit)); // a task's pending inputs, cancel and retry
  router.use(chartRoutes(ADMIN_PATH, options.activity, options.sampleDepth)); // the figures of the charts
  router.get(`${ADMIN_PATH}/api/tasks`, (req, res, next) => {
    const query = ListQuerySchema.safeParse(req.query);
    if (!query.success) {
      res.status(400).json({ error: query.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`) });
      return;
    }
    const { status, tool, owner, kind, cursor, limit } = query.data;
    options.admin
      .list(
        { statuses: status, ...(tool ? { tool } : {}), ...(owner ? { owner } : {}), ...(kind ? { kind } : {}) },
        { limit, ...(cursor ? { cursor } : {}) },
      )
      .then((page) => {
        res.json({
          tasks: page.tasks.map(operatorTask),
          ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
        });
      }, next);
  });
  router.get(`${ADMIN_PATH}/api/tasks/:taskId`, (req, res, next) => {
    options.admin.inspect(String(req.params['taskId'])).then((inspection) => {
      if (!inspection) {
        res.status(404).json({ error: 'Task not found (it never existed, expired or was purged)' });
        return;
      }
      res.json({ ...operatorInspection(inspection), task: operatorTask(inspection.record) });
    }, next);
  });
  router.get(`${ADMIN_PATH}/api/overview`, (_req, res, next) => {
    options.admin.overview().then((overview) => res.json(overview), next);
  });

  router.use(`${ADMIN_PATH}/queues`, await queueBoard(options.admin, `${ADMIN_PATH}/queues`));

  router.use(ADMIN_PATH, (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error instanceof ProtocolError) {
      res.status(400).json({ error: error.message });
      return;
    }
    next(error);
  });
  return router;
}

/**
 * bull-board, loaded only when the dashboard is enabled (it is the api's heaviest dependency). It shows every tool's
 * queue (docs/catalog.md), re-read from the catalog on each request, and the shared queue of earlier versions.
 */
async function queueBoard(admin: TaskAdmin, basePath: string): Promise<Router> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/express'),
  ]);
  const board = new ExpressAdapter();
  board.setBasePath(basePath);
  const { replaceQueues } = createBullBoard({
    queues: [],
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'mcp-task-runner' } },
  });
  let shown = '';
  const showQueues = (queues: Queue<ToolJobData>[]) => {
    const names = queues.map((queue) => queue.name).join(',');
    if (names === shown) return;
    shown = names;
    replaceQueues(
      queues.map((queue) => {
        const adapter = new BullMQAdapter(queue, {
          readOnlyMode: true,
          description: queue.name === TOOL_QUEUE_NAME ? 'MCP tool calls of earlier versions' : 'MCP tool calls',
        });
        // A job's data names its owner (the fair order's principal): shown by its label, as everywhere else.
        adapter.setFormatter('data', labelledJobData);
        return adapter;
      }),
    );
  };
  const router = express.Router();
  router.use((_req, _res, next) => {
    admin
      .queues()
      .then(showQueues, () => undefined)
      .finally(() => next());
  });
  router.use(board.getRouter() as Router);
  return router;
}

function labelledJobData(data: unknown): unknown {
  if (typeof data !== 'object' || data === null) return data;
  const { owner } = data as { owner?: unknown };
  return typeof owner === 'string' ? { ...data, owner: ownerLabel(owner) } : data;
}

/** Accepts `Authorization: Bearer <token>` or Basic auth with the token as password (any user name). */
export function requireAdminToken(token: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (carriesAdminToken(req.headers.authorization, token)) {
      next();
      return;
    }
    res
      .status(401)
      .set('WWW-Authenticate', 'Basic realm="mcp-task-runner admin", charset="UTF-8"')
      .json({ error: 'Unauthorized: send the ADMIN_TOKEN as a Bearer token or as the Basic auth password' });
  };
}

/** Whether an Authorization header carries ADMIN_TOKEN (Bearer, or the Basic password); never without a token set. */
export function carriesAdminToken(header: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return false;
  const given = presentedToken(header);
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  if (space === -1) return undefined;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

/** Fixed-length digests, so the comparison takes the same time whatever the lengths. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
