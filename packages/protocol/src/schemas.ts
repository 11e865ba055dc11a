// Zod schemas for what arrives on the wire. Inside the system we pass the inferred plain types.
import { z } from 'zod';
import { ErrorCode, ProtocolError } from './jsonrpc.ts';

export const LATEST_PROTOCOL_VERSION = '2025-11-25';
/** Revisions we speak, newest first. Tasks exist only in 2025-11-25 (see capabilitiesFor). */
export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
/** What a request without MCP-Protocol-Version is assumed to speak (Streamable HTTP rule). */
export const DEFAULT_NEGOTIATED_VERSION = '2025-03-26';

export const RequestIdSchema = z.union([z.string().max(256), z.number().int().safe()]);

const ParamsSchema = z.record(z.string(), z.unknown());

export const JsonRpcRequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: RequestIdSchema,
  method: z.string().min(1).max(256),
  params: ParamsSchema.optional(),
});

export type JsonRpcRequestMessage = z.infer<typeof JsonRpcRequestSchema>;

/**
 * The message as a JSON-RPC request (JsonRpcRequestSchema), or undefined when it is none. The usual request is
 * judged by hand, without zod copying its params, which the method's own schema parses next: so the envelope of a
 * message is validated once. Whatever the hand check does not take goes to zod, which has the last word.
 */
export function asJsonRpcRequest(message: unknown): JsonRpcRequestMessage | undefined {
  if (typeof message === 'object' && message !== null && !Array.isArray(message)) {
    const { jsonrpc, id, method, params } = message as Record<string, unknown>;
    if (
      jsonrpc === '2.0' &&
      ((typeof id === 'string' && id.length <= 256) || Number.isSafeInteger(id)) &&
      typeof method === 'string' &&
      method.length >= 1 &&
      method.length <= 256 &&
      (params === undefined ? !Object.hasOwn(message, 'params') : isPlainParams(params))
    ) {
      const request: JsonRpcRequestMessage = { jsonrpc, id: id as string | number, method };
      if (params !== undefined) request.params = params as Record<string, unknown>;
      return request;
    }
  }
  const parsed = JsonRpcRequestSchema.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}

/** A JSON object zod's record would pass unchanged (it leaves out an own `__proto__` key: zod decides those). */
function isPlainParams(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !Object.hasOwn(value, '__proto__')
  );
}

export const JsonRpcNotificationSchema = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1).max(256),
  params: ParamsSchema.optional(),
  // A message with an `id` is a request even when that id is invalid: it must get -32600, not pass as a notification.
  id: z.never().optional(),
});

export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});

export const JsonRpcResponseSchema = z.union([
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema, result: ParamsSchema }),
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema.nullable(), error: JsonRpcErrorObjectSchema }),
]);

const MetaSchema = z.looseObject({ progressToken: z.union([z.string(), z.number()]).optional() });

export const InitializeParamsSchema = z.looseObject({
  protocolVersion: z.string().min(1),
  capabilities: z.looseObject({}),
  clientInfo: z.looseObject({ name: z.string(), version: z.string() }),
});
export type InitializeParams = z.infer<typeof InitializeParamsSchema>;

/** `params.task` of a task-augmented request. */
export const TaskParamsSchema = z.looseObject({
  ttl: z.number().int().nonnegative().optional(),
});

export const CallToolParamsSchema = z.looseObject({
  name: z.string().min(1).max(256),
  arguments: z.record(z.string(), z.unknown()).optional(),
  task: TaskParamsSchema.optional(),
  _meta: MetaSchema.optional(),
});
export type CallToolParams = z.infer<typeof CallToolParamsSchema>;

export const TaskIdParamsSchema = z.looseObject({
  taskId: z.string().min(1).max(256),
});

/**
 * tools/call's params (CallToolParamsSchema). The usual call is judged by hand and handed on as it arrived: zod
 * would copy it, its arguments, task and `_meta` once per request, for a result equal to the original (no own
 * `__proto__` key, which zod leaves out, and a ttl that is a safe integer). Anything else goes to zod, which has
 * the last word and says what is wrong.
 */
export function parseCallToolParams(params: unknown): CallToolParams {
  if (isPlainParams(params)) {
    const { name, arguments: args, task, _meta: meta } = params as Record<string, unknown>;
    if (
      typeof name === 'string' &&
      name.length >= 1 &&
      name.length <= 256 &&
      (args === undefined || isPlainParams(args)) &&
      (task === undefined || (isPlainParams(task) && isTtl((task as Record<string, unknown>)['ttl']))) &&
      (meta === undefined ||
        (isPlainParams(meta) && isProgressToken((meta as Record<string, unknown>)['progressToken'])))
    ) {
      return params as CallToolParams;
    }
  }
  return parseParams(CallToolParamsSchema, params, 'tools/call');
}

/** The `taskId` of tasks/get, tasks/result or tasks/cancel (TaskIdParamsSchema): by hand when it is a usual one. */
export function parseTaskId(params: unknown, method: string): string {
  if (typeof params === 'object' && params !== null && !Array.isArray(params)) {
    const taskId = (params as Record<string, unknown>)['taskId'];
    if (typeof taskId === 'string' && taskId.length >= 1 && taskId.length <= 256) return taskId;
  }
  return parseParams(TaskIdParamsSchema, params, method).taskId;
}

function isTtl(value: unknown): boolean {
  return value === undefined || (Number.isSafeInteger(value) && (value as number) >= 0);
}

function isProgressToken(value: unknown): boolean {
  return value === undefined || typeof value === 'string' || Number.isFinite(value);
}

export const ListParamsSchema = z.looseObject({
  cursor: z.string().max(1024).optional(),
});

export const ContentBlockSchema = z.looseObject({ type: z.string() });

export const CallToolResultSchema = z.looseObject({
  content: z.array(ContentBlockSchema),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});
export type CallToolResult = z.infer<typeof CallToolResultSchema>;

/** Parses `params` of `method`, or throws the -32602 error that says which field is wrong and why. */
export function parseParams<S extends z.ZodType>(schema: S, params: unknown, method: string): z.infer<S> {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  throw new ProtocolError(ErrorCode.InvalidParams, `Invalid params for ${method}: ${describeIssues(parsed.error)}`);
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}
