// The `_meta` keys of the 2025-11-25 Tasks specification.
import type { JsonRpcErrorObject } from './jsonrpc.ts';

export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
export const MODEL_IMMEDIATE_RESPONSE_META_KEY = 'io.modelcontextprotocol/model-immediate-response';

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
