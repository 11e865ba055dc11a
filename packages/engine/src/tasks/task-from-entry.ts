// "An audited task from a catalog entry": what the api's tools/call (apps/api/src/calls/start-call.ts) and a running
// tool's ctx.callTool (apps/worker/src/child-calls.ts) both do to start a task. The tool's catalog entry says where
// its job goes and how it is scheduled; the one create path writes the record and its job in one step
// (invariant 2); the creation is audited (T-AUDIT-1) with who asked for it.
import type { CatalogEntry, JsonRpcId } from '@mcp-tasks/protocol';
import { audit, AuditEvent } from '../security/audit.ts';
import type { Logger } from '@mcp-tasks/runtime';
import type { RequestOpening } from '../request-opening.ts';
import type { Waiter } from '../subscriber.ts';
import type { CreatedTask, CreateTaskInput, TaskService } from './task-service.ts';

/** Who asked for the task, as the audit trail names them. */
export interface TaskRequester {
  /** The audit child logger (auditLogger). */
  audit: Logger;
  /** The request that started it (an api call), and its 2025-11-25 session. */
  requestId?: JsonRpcId;
  sessionId?: string;
  /** The task whose tool started it (a child task). */
  parentTaskId?: string;
}

/** What the rest of a creation says; the tool's own part comes from its catalog entry. */
export type EntryTaskInput = Omit<CreateTaskInput, 'tool' | 'retrySafe' | 'queue' | 'scheduling'>;

/**
 * Creates a task of `entry`'s tool through TaskService.create, and audits it: TaskCreated, or TaskReused when an
 * idempotency key named a live task already. A child's reuse is not audited: it is its parent's replay finding the
 * child an earlier attempt started, whose creation was.
 */
export async function createTaskFromEntry(
  tasks: TaskService,
  entry: CatalogEntry,
  input: EntryTaskInput,
  requester: TaskRequester,
  opening?: RequestOpening,
): Promise<CreatedTask> {
  const record = await tasks.create(inputOf(entry, input), opening);
  auditCreated(entry, input, requester, record);
  return record;
}

/**
 * createTaskFromEntry through TaskService.createWatched: for a caller that waits for the task at once (a plain
 * call), with the waiter opened before the record was written (undefined when a key named another task).
 */
export async function createWatchedTaskFromEntry(
  tasks: TaskService,
  entry: CatalogEntry,
  input: EntryTaskInput,
  requester: TaskRequester,
  opening?: RequestOpening,
): Promise<{ record: CreatedTask; waiter: Waiter | undefined }> {
  const created = await tasks.createWatched(inputOf(entry, input), opening);
  auditCreated(entry, input, requester, created.record);
  return created;
}

function inputOf(entry: CatalogEntry, input: EntryTaskInput): CreateTaskInput {
  return {
    ...input,
    tool: entry.name,
    retrySafe: entry.retrySafe,
    ...(entry.external ? { queue: entry.queue } : {}),
    ...(entry.scheduling !== undefined ? { scheduling: entry.scheduling } : {}),
  };
}

function auditCreated(entry: CatalogEntry, input: EntryTaskInput, requester: TaskRequester, record: CreatedTask): void {
  if (record.reused && input.parent) return;
  audit(requester.audit, record.reused ? AuditEvent.TaskReused : AuditEvent.TaskCreated, {
    principal: record.owner,
    taskId: record.taskId,
    tool: entry.name,
    ...(requester.requestId !== undefined ? { requestId: requester.requestId } : {}),
    ...(requester.sessionId !== undefined ? { sessionId: requester.sessionId } : {}),
    ...(requester.parentTaskId !== undefined ? { parentTaskId: requester.parentTaskId } : {}),
    kind: record.kind,
    ttl: record.ttl,
  });
}
