// The task record we keep in Redis and its wire form, the MCP `Task`.
import type { JsonRpcErrorObject } from './jsonrpc.ts';
import type { TaskStatus } from './task-status.ts';

/** What the underlying request answered: its result, or the JSON-RPC error the plain call would have sent. */
export type Outcome = { result: Record<string, unknown> } | { error: JsonRpcErrorObject };

/** How a record came to be: a task-augmented call (listed, gettable) or a plain call run on a worker (hidden). */
export const TaskKind = { Task: 'task', PlainCall: 'call' } as const;
export type TaskKind = (typeof TaskKind)[keyof typeof TaskKind];

export interface TaskRecord {
  taskId: string;
  kind: TaskKind;
  status: TaskStatus;
  statusMessage?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds; moves on every status change. */
  lastUpdatedAt: number;
  /** Milliseconds from createdAt after which the record, its result and its job are deleted. */
  ttl: number;
  pollInterval: number;
  /** The context the task belongs to (principal or MCP session): see DESIGN.md invariant 5. */
  owner: string;
  tool: string;
  outcome?: Outcome;
}

/** The MCP `Task` object (2025-11-25 schema). */
export interface Task {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
}

export function toWireTask(record: TaskRecord): Task {
  const task: Task = {
    taskId: record.taskId,
    status: record.status,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ttl: record.ttl,
    pollInterval: record.pollInterval,
  };
  if (record.statusMessage !== undefined && record.statusMessage !== '') task.statusMessage = record.statusMessage;
  return task;
}

export function expiresAt(record: Pick<TaskRecord, 'createdAt' | 'ttl'>): number {
  return record.createdAt + record.ttl;
}
