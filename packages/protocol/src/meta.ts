// The `_meta` keys of the 2025-11-25 Tasks specification.
import type { JsonRpcErrorObject } from './jsonrpc.ts';

export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
export const MODEL_IMMEDIATE_RESPONSE_META_KEY = 'io.modelcontextprotocol/model-immediate-response';

/**
 * The runner's own `_meta` keys. MCP reserves prefixes whose second label is `modelcontextprotocol` or `mcp` and asks
 * for reverse-DNS prefixes; the project owns no domain, so its keys carry its package name as a one-label prefix,
 * which no one else publishes under (docs/durable-execution.md, "Names on the wire").
 */
export const RunnerMeta = {
  /** In `tools/call` params: the idempotency key, for clients that cannot set the `Idempotency-Key` header. */
  IdempotencyKey: 'mcp-task-runner/idempotency-key',
  /** On a child task (ctx.callTool) in tasks/get and tasks/list: `{ taskId }` of the task that started it. */
  ParentTask: 'mcp-task-runner/parent-task',
  /**
   * In `tools/call` params: where to post the task, signed, when it ends (or at every change of status), as
   * `"https://..."` or `{ url, events: 'terminal' | 'all' }` (docs/webhooks.md).
   */
  Webhook: 'mcp-task-runner/webhook',
  /**
   * In a webhook's body: `{ bytes }` when the task's result (or error) was left out because the body would have been
   * larger than WEBHOOK_MAX_BODY_BYTES; tasks/get or tasks/result give it (docs/webhooks.md).
   */
  ResultOmitted: 'mcp-task-runner/result-omitted',
} as const;

/** The `_meta` of a task started by another task's ctx.callTool, naming its parent. */
export function parentTaskMeta(parent: string): Record<string, { taskId: string }> {
  return { [RunnerMeta.ParentTask]: { taskId: parent } };
}

export function relatedTaskMeta(taskId: string): Record<string, { taskId: string }> {
  return { [RELATED_TASK_META_KEY]: { taskId } };
}

/** Adds the related-task `_meta` to a result, keeping whatever `_meta` the result already had (T-RES-3). */
export function withRelatedTask(result: Record<string, unknown>, taskId: string): Record<string, unknown> {
  const meta = isPlainObject(result['_meta']) ? result['_meta'] : {};
  return { ...result, _meta: { ...meta, ...relatedTaskMeta(taskId) } };
}

/**
 * A JSON-RPC error has no `_meta` of its own; the related-task key goes into `error.data._meta` so that the error
 * stays exactly the one the plain call would have answered, plus the association the spec asks for.
 */
export function errorWithRelatedTask(error: JsonRpcErrorObject, taskId: string): JsonRpcErrorObject {
  const data = isPlainObject(error.data) ? error.data : error.data === undefined ? {} : { value: error.data };
  const meta = isPlainObject(data['_meta']) ? data['_meta'] : {};
  return { ...error, data: { ...data, _meta: { ...meta, ...relatedTaskMeta(taskId) } } };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
