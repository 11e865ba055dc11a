// The 2026-07-28 wire: its protocol version, the per-request `_meta` keys, its error codes, and the one renderer
// of a task for the `io.modelcontextprotocol/tasks` extension (the 2025-11-25 renderer is task.ts). Records are
// era-neutral; each era renders them here or there, never anywhere else.
import type { JsonRpcErrorObject } from './jsonrpc.ts';
import { parentTaskMeta } from './meta.ts';
import { cancelledSettlement } from './outcome.ts';
import type { TaskFacts, TaskRecord } from './task.ts';
import { TaskStatus } from './task-status.ts';

export const MODERN_PROTOCOL_VERSION = '2026-07-28';
/** The stateless revisions this server serves (C26-VER-4; Q3 in docs/protocol.md: modern ones only). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = [MODERN_PROTOCOL_VERSION];

export const ModernMeta = {
  ProtocolVersion: 'io.modelcontextprotocol/protocolVersion',
  ClientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  ClientInfo: 'io.modelcontextprotocol/clientInfo',
  LogLevel: 'io.modelcontextprotocol/logLevel',
  ServerInfo: 'io.modelcontextprotocol/serverInfo',
  SubscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The tasks extension's identifier, in `capabilities.extensions` on both sides. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The error codes 2026-07-28 defines (C26-ERR-2: no other code in -32020..-32099 is sent). */
export const ModernErrorCode = {
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
  /**
   * Ours, not the revision's: a configured limit was hit, as `ErrorCode.LimitExceeded` (-32029) is on the legacy
   * wire. 2026-07-28 reserves -32020…-32099 for its own codes and forbids sending an undefined one there
   * (C26-ERR-2), so the modern wire uses -32000, the first implementation-defined code it leaves free.
   */
  LimitExceeded: -32000,
} as const;
export type ModernErrorCode = (typeof ModernErrorCode)[keyof typeof ModernErrorCode];

/** The extension's `Task` (EXTS): `ttlMs`/`pollIntervalMs` instead of `ttl`/`pollInterval`. */
export interface ModernTask {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** Only on a child task: the parent it was started by (RunnerMeta.ParentTask). */
  _meta?: Record<string, unknown>;
}

/** An outstanding input request of a task or an MRTR round: `{method, params}` without JSON-RPC framing. */
export interface InputRequest {
  method: string;
  params: Record<string, unknown>;
}

const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/**
 * The status a 2026 client sees. A tool result with `isError: true` is a *completed* task there (X-GET-5: the
 * result is what the call would have returned), while 2025-11-25 calls it failed (T-LIFE-4); the record keeps
 * the era-neutral fact (its outcome is a result, not a JSON-RPC error), and each renderer maps it.
 */
export function modernStatusOf(record: Pick<TaskRecord, 'status' | 'outcome'>): TaskStatus {
  if (record.status === TaskStatus.Failed && record.outcome !== undefined && 'result' in record.outcome)
    return TaskStatus.Completed;
  return record.status;
}

export function toModernTask(record: TaskFacts & Pick<TaskRecord, 'outcome'>): ModernTask {
  const task: ModernTask = {
    taskId: record.taskId,
    status: modernStatusOf(record),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ttlMs: record.ttl,
    pollIntervalMs: record.pollInterval,
  };
  if (record.statusMessage !== undefined && record.statusMessage !== '') task.statusMessage = record.statusMessage;
  if (record.parent !== undefined) task._meta = parentTaskMeta(record.parent);
  return task;
}

/** The flat `CreateTaskResult` (X-RES-1, X-RES-3): no wrapper, no result, no requestState. */
export function modernCreateTaskResult(record: TaskRecord): Record<string, unknown> {
  return { resultType: 'task', ...toModernTask(record) };
}

/**
 * The `tasks/get` answer (X-GET-1, X-GET-5..7): the task with what its status carries inlined. `inputs` are the
 * task's outstanding requests keyed by their ids; a task whose requests were all answered but whose worker has
 * not resumed yet is shown `working`, so that `input_required` always comes with something to answer.
 */
export function modernDetailedTask(record: TaskRecord, inputs: Record<string, InputRequest>): Record<string, unknown> {
  const task = toModernTask(record);
  const base = { resultType: 'complete', ...task };
  switch (task.status) {
    case TaskStatus.InputRequired:
      if (Object.keys(inputs).length === 0) return { ...base, status: TaskStatus.Working };
      return { ...base, inputRequests: inputs };
    case TaskStatus.Completed: {
      const outcome = record.outcome;
      const result = outcome && 'result' in outcome ? outcome.result : { content: [] };
      return { ...base, result: inlinedResult(result) };
    }
    case TaskStatus.Failed: {
      const outcome = record.outcome ?? cancelledSettlement(record.statusMessage).outcome;
      const error: JsonRpcErrorObject =
        'error' in outcome ? outcome.error : { code: -32603, message: record.statusMessage ?? 'The task failed' };
      return { ...base, statusMessage: task.statusMessage ?? error.message, error };
    }
    default:
      return base;
  }
}

/** `notifications/tasks` on a listen stream: the full DetailedTask (X-NTF-1), tagged with its subscription. */
export function modernTaskNotification(
  detailed: Record<string, unknown>,
  subscriptionId: string | number,
): Record<string, unknown> {
  const { resultType: _resultType, _meta: meta, ...task } = detailed;
  // A child task's own `_meta` (its parent) stays beside the subscription's.
  const own = typeof meta === 'object' && meta !== null ? meta : {};
  return {
    jsonrpc: '2.0',
    method: 'notifications/tasks',
    params: { ...task, _meta: { ...own, [ModernMeta.SubscriptionId]: subscriptionId } },
  };
}

/** A stored server-to-client request message as the extension shows it: `{method, params}`, no related-task. */
export function inputRequestOf(message: Record<string, unknown>): InputRequest | undefined {
  const method = message['method'];
  const params = message['params'];
  if (typeof method !== 'string' || typeof params !== 'object' || params === null) return undefined;
  const { _meta: meta, ...rest } = params as Record<string, unknown>;
  if (typeof meta !== 'object' || meta === null) return { method, params: rest };
  const { [RELATED_TASK_META]: _related, ...kept } = meta as Record<string, unknown>;
  return { method, params: Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest };
}

/** The stored result with `resultType` (Q5) and without the related-task `_meta` (X-GET-7). */
function inlinedResult(result: Record<string, unknown>): Record<string, unknown> {
  const meta = result['_meta'];
  let inlined = result;
  if (typeof meta === 'object' && meta !== null && RELATED_TASK_META in meta) {
    const { [RELATED_TASK_META]: _related, ...kept } = meta as Record<string, unknown>;
    const { _meta: _dropped, ...rest } = result;
    inlined = Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
  }
  return { resultType: 'complete', ...inlined };
}
