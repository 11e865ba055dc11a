// The audit trail (T-AUDIT-1): one structured record per task event and per refused access, on a child logger
// marked `audit: true` so that a log pipeline can route these records apart. Records name the principal, the
// task, the tool and the request; never arguments, results, tokens or keys. Where a session id is a credential (no
// authentication), the logger writes its digest instead (redact.ts of @mcp-tasks/runtime), in these records as in
// every other line.
import type { Logger } from '@mcp-tasks/runtime';
import type { TaskObserver } from '../records/store.ts';

export const AuditEvent = {
  TaskCreated: 'task.created',
  /** A tools/call whose idempotency key named a live task of its principal's: that task was answered. */
  TaskReused: 'task.reused',
  TaskCompleted: 'task.completed',
  TaskFailed: 'task.failed',
  TaskCancelled: 'task.cancelled',
  ResultRetrieved: 'task.result_retrieved',
  /** An event was sent to a task (docs/durable-execution.md, "Waits"): by its principal, an operator or a callback. */
  TaskSignalled: 'task.signalled',
  AccessRejected: 'access.rejected',
  /** AUTH_API_KEYS_FILE read again (SIGHUP): keys added or revoked. */
  KeysReloaded: 'auth.keys_reloaded',
  /** An operator cancelled or retried a task from the dashboard. */
  OperatorCancelled: 'operator.task_cancelled',
  OperatorRetried: 'operator.task_retried',
} as const;
export type AuditEvent = (typeof AuditEvent)[keyof typeof AuditEvent];

export interface AuditFields {
  /**
   * The task owner: `principal:key:<name>` or `principal:jwt:<iss>|<sub>` with authentication; `session:<id>`
   * without, logged as `session:sha256:<16 hex>`.
   */
  principal?: string;
  taskId?: string;
  tool?: string;
  requestId?: string | number;
  /** Logged as `sha256:<16 hex>` without authentication. */
  sessionId?: string;
  /** The client address (access rejections). */
  address?: string;
  /** Why an access was refused. */
  reason?: string;
  [extra: string]: unknown;
}

export function auditLogger(log: Logger): Logger {
  return log.child({ audit: true });
}

export function audit(log: Logger, event: AuditEvent, fields: AuditFields): void {
  log.info(event, { event, ...fields });
}

/** Audits every terminal transition won by this process (worker settle, api cancel, reconciliation). */
export function auditObserver(log: Logger): TaskObserver {
  const events = {
    completed: AuditEvent.TaskCompleted,
    failed: AuditEvent.TaskFailed,
    cancelled: AuditEvent.TaskCancelled,
  } as const;
  return {
    finished: (task, status) => {
      if (!(status in events)) return;
      audit(log, events[status as keyof typeof events], {
        principal: task.owner,
        taskId: task.taskId,
        tool: task.tool,
        kind: task.kind,
      });
    },
  };
}
