// The task record we keep in Redis and its wire form, the MCP `Task`.
import type { JsonRpcErrorObject } from './jsonrpc.ts';
import { parentTaskMeta } from './meta.ts';
import type { TaskStatus } from './task-status.ts';
import type { WebhookTarget } from './webhook.ts';

/** What the underlying request answered: its result, or the JSON-RPC error the plain call would have sent. */
export type Outcome = { result: Record<string, unknown> } | { error: JsonRpcErrorObject };

/**
 * What a task record stands for. `Task`: a task-augmented tools/call, which the client sees, lists and gets.
 * `PlainToolCall`: a tools/call sent without `params.task` that still runs on a worker through a record of its own;
 * the client never sees that record, and it is deleted once the call is answered (apps/api/src/plain-calls.ts).
 * The stored value stays 'call': records in Redis, resumable SSE event ids, the `kind` metrics label and the CLI's
 * `--kind` carry it.
 */
export const TaskKind = { Task: 'task', PlainToolCall: 'call' } as const;
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
  /** The context the task belongs to (principal or MCP session): invariant 5 of docs/architecture.md. */
  owner: string;
  /** The MCP session that created the task: its event stream carries the task's notifications and requests. */
  sessionId: string;
  tool: string;
  /** The `progressToken` of the original request: progress notifications carry it for the task's life (T-PROG-1). */
  progressToken?: string | number;
  outcome?: Outcome;
  /** Set when the work runs outside our workers (see docs/external-tools.md): where it is and how it reports back. */
  external?: ExternalRef;
  /**
   * While tracing is on: the W3C trace context of the request that created the task, the task's trace. Its later
   * requests (tasks/get, ...) link their spans to it, and a lost attempt is recorded in it (docs/observability.md).
   */
  trace?: { traceparent: string; tracestate?: string };
  /** The task whose tool started this one with `ctx.callTool` (docs/durable-execution.md). */
  parent?: string;
  /** What the task's tool keeps durably (docs/durable-execution.md); absent until it keeps anything. */
  durable?: DurableFacts;
  /** The failed task this one continues (`mcpt retry --resume`): it began with that task's completed steps. */
  resumedFrom?: string;
  /** The task that continues this failed one (`mcpt retry --resume`): a failed task is resumed once. */
  resumedBy?: string;
  /** How many times a worker shutting down handed the task's job back mid-run (counted in the tool's ctx.attempt). */
  handBacks?: number;
  /** What the task's tool waits for while its job is parked (docs/durable-execution.md, "Waits"); absent otherwise. */
  wait?: TaskWait;
  /** Where the task is posted when it changes (docs/webhooks.md): the step that moves it queues the delivery. */
  webhook?: WebhookTarget;
}

/** What a parked task waits for: a time (`sleep`), an event (`event`) or its client's answer (`input`). */
export const WaitKind = { Sleep: 'sleep', Event: 'event', Input: 'input' } as const;
export type WaitKind = (typeof WaitKind)[keyof typeof WaitKind];
export const WAIT_KINDS: readonly WaitKind[] = Object.values(WaitKind);

/** A parked task's wait, as its record says it (docs/durable-execution.md, "Waits"). */
export interface TaskWait {
  kind: WaitKind;
  /** Epoch ms: the end of the sleep, or the wait's timeout (the task's expiry when it has none). */
  until: number;
  /** The wait's key among the task's waits (`sleep#1`, `event:approved#1`, `input:confirm`). */
  key: string;
  /** The event's name (event), the request's method (input). */
  name?: string;
  /** The parked input request's id (input): a cancel withdraws it. */
  requestId?: string;
}

/**
 * What the record says of the state a tool keeps beside it (checkpoint, step results, child tasks), written by the
 * scripts that store that state: enough for operators, and for a later attempt to know whether to read it.
 */
export interface DurableFacts {
  /** The last checkpoint: when it was saved (epoch ms) and its size (bytes of JSON). */
  checkpoint?: { at: number; bytes: number };
  /** How many child tasks the tool started (ctx.callTool). */
  children: number;
}

/**
 * Where a task's work runs when not in our workers. `callback`: the external system posts the outcome to the api
 * (no job, no worker slot meanwhile); `poll`: our worker polls `statusUrl` from a delayed job; `queue`: a consumer
 * outside this codebase takes the job from BullMQ queue `queue` and returns the CallToolResult (docs/job-contract.md).
 */
export interface ExternalRef {
  mode: 'callback' | 'poll' | 'queue';
  /** The external system's id of the work (callback, poll). */
  externalId?: string;
  statusUrl?: string;
  /** POSTed (empty JSON body) when the task is cancelled. */
  cancelUrl?: string;
  /** queue: the BullMQ queue holding the job. */
  queue?: string;
  /** Epoch ms of the submission (poll: the backoff grows with the time since). */
  submittedAt?: number;
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
  /** Only on a child task: the parent it was started by (RunnerMeta.ParentTask). */
  _meta?: Record<string, unknown>;
}

/** What a `Task` is rendered from: a whole record, or the facts a status event in a session stream carries. */
export type TaskFacts = Pick<
  TaskRecord,
  'taskId' | 'status' | 'statusMessage' | 'createdAt' | 'lastUpdatedAt' | 'ttl' | 'pollInterval'
> &
  Partial<Pick<TaskRecord, 'parent'>>;

/** The one renderer of a task for the 2025-11-25 wire: tasks/get, tasks/list, tasks/cancel, CreateTaskResult. */
export function toWireTask(record: TaskFacts): Task {
  const task: Task = {
    taskId: record.taskId,
    status: record.status,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ttl: record.ttl,
    pollInterval: record.pollInterval,
  };
  if (record.statusMessage !== undefined && record.statusMessage !== '') task.statusMessage = record.statusMessage;
  if (record.parent !== undefined) task._meta = parentTaskMeta(record.parent);
  return task;
}

/** notifications/tasks/status: the whole Task, rendered as tasks/get renders it (T-NOTIFY-1). */
export function taskStatusNotification(task: TaskFacts): {
  jsonrpc: '2.0';
  method: 'notifications/tasks/status';
  params: Task;
} {
  return { jsonrpc: '2.0', method: 'notifications/tasks/status', params: toWireTask(task) };
}

export function expiresAt(record: Pick<TaskRecord, 'createdAt' | 'ttl'>): number {
  return record.createdAt + record.ttl;
}
