// The task operations after creation, whichever wire asks: find the caller's task, list them, cancel one. Which
// task a caller may read is decided here once: its owner's, or (2026-07-28 without authentication) whoever holds
// its unguessable id, for tasks created without authentication only (X-SEC-2).
import { withServedStatus, type RequestOpening, type TaskPage } from '@mcp-tasks/engine';
import { linkTo } from '@mcp-tasks/runtime';
import { isTerminal, TaskKind, TaskNotFoundError, InvalidStateError, type TaskRecord } from '@mcp-tasks/protocol';
import type { CallContext } from './request.ts';

/** The owner of tasks created on 2026-07-28 without authentication: `anonymous:<address>`. */
export const ANONYMOUS_OWNER_PREFIX = 'anonymous:';

export interface FindOptions {
  /** Register this replica as a waiter for the task's changes: its channel then wakes the caller's waits. */
  watch?: boolean;
  /** The request's opening, left to the read's script (RequestOpening; 2025-11-25 tasks/result, get, cancel). */
  opening?: RequestOpening;
}

/**
 * The caller's task, or TaskNotFoundError for one that does not exist, expired or is not theirs: the caller cannot
 * tell them apart (T-ERR-1, T-SEC-1).
 */
export async function findTask(context: CallContext, taskId: string, options: FindOptions = {}): Promise<TaskRecord> {
  return (await findTaskSince(context, taskId, options)).record;
}

/**
 * findTask that, with `sinceOf` (a session id: tasks/result of a client that accepts SSE), also answers where that
 * session's event stream stands for an unfinished task of the session (`since`: where its answer stream would
 * start), read in the same step as the task.
 */
export async function findTaskSince(
  context: CallContext,
  taskId: string,
  options: FindOptions & { sinceOf?: string },
): Promise<{ record: TaskRecord; since?: string }> {
  const read = await readTask(context, taskId, options);
  linkToTask(context, read.record);
  // A working task whose tool no live worker serves says so (issue 31): from this replica's cached catalog.
  const live = context.services.tools.view.entries();
  return { ...read, record: withServedStatus(read.record, (tool) => live.has(tool)) };
}

async function readTask(
  context: CallContext,
  taskId: string,
  options: FindOptions & { sinceOf?: string },
): Promise<{ record: TaskRecord; since?: string }> {
  const { services, caller } = context;
  if (!caller.readsByCapability) return services.tasks.getOwnedSince(taskId, caller.owner, options);
  const record = await services.store.get(taskId);
  if (!record || record.kind !== TaskKind.Task || !record.owner.startsWith(ANONYMOUS_OWNER_PREFIX)) {
    throw new TaskNotFoundError();
  }
  if (!options.watch) return { record };
  return { record: await services.tasks.getOwned(taskId, record.owner, { watch: true }) };
}

/**
 * The request's span (tracing on) names the task and links to the task's trace: a client's tasks/get or tasks/cancel
 * lives in the trace it sent, and from there leads to the task's own (docs/observability.md).
 */
function linkToTask(context: CallContext, record: TaskRecord): void {
  const { span } = context;
  if (!span) return;
  span.setAttribute('mcp.task.id', record.taskId);
  const link = linkTo(record.trace);
  if (link) span.addLink(link);
}

/** A page of the caller's tasks, newest first (tasks/list). */
export function listTasks(context: CallContext, cursor: string | undefined): Promise<TaskPage> {
  const { services, caller } = context;
  return services.store.list(caller.owner, cursor, services.config.LIST_PAGE_SIZE);
}

export type CancelOutcome =
  | { cancelled: TaskRecord }
  /** The task had ended already (or ended between the read and the move): its status stands. */
  | { ended: TaskRecord; status: string };

/**
 * Moves the caller's task to `cancelled` and stops its work (T-CANCEL-*), unless it has ended already. The read that
 * checks the owner opens the request when the transport left that to it (`opening`): a request its session's end or a
 * rate limit refuses reads and cancels nothing.
 */
export async function cancelTask(
  context: CallContext,
  taskId: string,
  options: Pick<FindOptions, 'opening'> = {},
): Promise<CancelOutcome> {
  const record = await findTask(context, taskId, options);
  if (isTerminal(record.status)) return { ended: record, status: record.status };
  try {
    const cancelled = await context.services.tasks.cancel(record);
    context.log.info('task cancelled', { taskId, tool: record.tool, owner: record.owner });
    return { cancelled };
  } catch (error) {
    if (error instanceof InvalidStateError) return { ended: record, status: error.current };
    throw error;
  }
}
