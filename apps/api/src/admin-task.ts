// What the dashboard's task page (admin-assets/task.html) reads and does beyond the task's inspection (admin.ts): its
// pending input requests as JSON, and the operators' cancel, retry and resume (`mcpt retry --resume`), each audited.
import express, { type Request, type Response, type Router } from 'express';
import {
  AdminError,
  audit,
  AuditEvent,
  operatorTask,
  type Engine,
  type TaskAdmin,
  type TaskService,
} from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';
import { LocalErrorCode, ProtocolError, type TaskRecord } from '@mcp-tasks/protocol';

/** What an operator can do to a task from the dashboard (the CLI's cancel and retry, on the api's engine). */
export interface OperatorActions {
  admin: TaskAdmin;
  inputs: Pick<Engine['inputs'], 'pending'>;
  cancel(taskId: string): Promise<TaskRecord>;
  /** Runs a failed task again as a new task; with `resume`, from its completed steps (docs/durable-execution.md). */
  retry(taskId: string, resume?: boolean): Promise<TaskRecord>;
}

export function operatorActions(engine: Engine): OperatorActions {
  return {
    admin: engine.admin,
    inputs: engine.inputs,
    cancel: (taskId) => engine.admin.cancel(engine.tasks, taskId),
    retry: async (taskId, resume = false) => {
      // The tool's definition comes from the live catalog, as for the api's own calls.
      const catalog = await engine.catalog.read();
      const service = (original: TaskRecord): TaskService =>
        // A retried task keeps its ttl, whatever TASK_TTL_MAX_MS, and its pollInterval (as `mcpt retry`).
        engine.tasksWith({ maxTtlMs: Number.MAX_SAFE_INTEGER, pollIntervalMs: original.pollInterval });
      return engine.admin.retry(taskId, {
        resume,
        service,
        tool: (tool) => {
          const entry = catalog.get(tool);
          if (!entry)
            throw new AdminError(
              LocalErrorCode.NotAllowed,
              `Tool '${tool}' is not in the tool catalog (no worker serves it now); the task cannot be retried`,
            );
          return entry;
        },
      });
    },
  };
}

export function taskRoutes(base: string, actions: OperatorActions, auditLog: Logger): Router {
  const router = express.Router();
  router.get(`${base}/api/tasks/:taskId/inputs`, (req, res, next) => {
    (async () => {
      const inspection = await actions.admin.inspect(String(req.params['taskId']));
      if (!inspection) {
        res.status(404).json({ error: 'Task not found (it never existed, expired or was purged)' });
        return;
      }
      res.json({ pending: await actions.inputs.pending(inspection.record) });
    })().catch(next);
  });
  const act = (action: 'cancel' | 'retry' | 'resume') => (req: Request, res: Response) => {
    const taskId = String(req.params['taskId']);
    // A JSON body is asked for so that a cross-site form cannot post here with the browser's stored credentials:
    // such a request needs a CORS preflight, which this api never grants.
    if (!req.is('application/json')) {
      res.status(415).json({ error: 'Send Content-Type: application/json' });
      return;
    }
    const run = action === 'cancel' ? actions.cancel(taskId) : actions.retry(taskId, action === 'resume');
    run.then(
      (record) => {
        audit(auditLog, action === 'cancel' ? AuditEvent.OperatorCancelled : AuditEvent.OperatorRetried, {
          principal: record.owner,
          taskId,
          tool: record.tool,
          address: req.ip ?? '',
          via: 'dashboard',
          ...(action !== 'cancel' ? { newTaskId: record.taskId } : {}),
          ...(action === 'resume' ? { resumed: true } : {}),
        });
        res.json({ task: operatorTask(record) });
      },
      (error: unknown) => {
        if (error instanceof AdminError) {
          res.status(error.code === LocalErrorCode.TaskNotFound ? 404 : 409).json({ error: error.message });
          return;
        }
        if (error instanceof ProtocolError) {
          // A race: the task ended between the read and the cancel.
          res.status(409).json({ error: error.message });
          return;
        }
        res.status(500).json({ error: error instanceof Error ? error.message : String(error) });
      },
    );
  };
  router.post(`${base}/api/tasks/:taskId/cancel`, act('cancel'));
  router.post(`${base}/api/tasks/:taskId/retry`, act('retry'));
  router.post(`${base}/api/tasks/:taskId/resume`, act('resume'));
  return router;
}
