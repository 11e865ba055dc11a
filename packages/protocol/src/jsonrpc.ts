// JSON-RPC 2.0 vocabulary: error codes and the one error class that travels on the wire.

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Our own code (outside the reserved range) for a request cut short by cancellation; see docs/protocol.md. */
  RequestCancelled: -32800,
  /** A configured limit was hit (body size, tasks per principal, rate, ...). */
  LimitExceeded: -32029,
  /**
   * Our own code, sent with HTTP 404, for an Mcp-Session-Id this server does not know: expired, deleted, or another
   * principal's (the MCP SDK's Streamable HTTP server answers the same code).
   */
  SessionNotFound: -32001,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export type JsonRpcId = string | number;

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * A protocol error: sent to the peer as a JSON-RPC error with a numeric code. Local failures that never reach
 * the wire use {@link LocalError} instead.
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }

  static from(error: JsonRpcErrorObject): ProtocolError {
    return new ProtocolError(error.code, error.message, error.data);
  }
}

/**
 * The codes of failures inside our processes. A tool may catch a LocalError from its context (`elicit`, `sample`)
 * and branch on its code; the values are stable strings, so they can be logged and matched across versions.
 */
export const LocalErrorCode = {
  /** The owner already has MAX_TASKS_PER_OWNER unfinished tasks. */
  OwnerTaskLimit: 'owner-task-limit',
  /** The task ended (cancelled, settled, expired) while its tool waited for the client. */
  TaskEnded: 'task-ended',
  /** The client's session ended before an input request could be sent. */
  SessionEnded: 'session-ended',
  /** The client did not declare the capability an input request needs. */
  CapabilityMissing: 'capability-missing',
  /** The client did not answer an input request within INPUT_REQUEST_TIMEOUT_MS. */
  InputTimeout: 'input-timeout',
  /** The client answered an input request with a JSON-RPC error. */
  InputError: 'input-error',
  /** A later attempt of the task's job started: this one may no longer move the task. */
  AttemptSuperseded: 'attempt-superseded',
  /** An attempt tried to move its task before it was started through the fence. */
  AttemptNotStarted: 'attempt-not-started',
  /** An operator named a task that does not exist (never did, expired or was purged). */
  TaskNotFound: 'task-not-found',
  /** An operator asked for something the task's state does not allow (retry of a live task, say). */
  NotAllowed: 'not-allowed',
  /** A request was refused as a method's script opened it: its session is gone, or a rate limit refused it. */
  RequestRefused: 'request-refused',
} as const;
export type LocalErrorCode = (typeof LocalErrorCode)[keyof typeof LocalErrorCode];

/** A failure inside our processes, identified by a {@link LocalErrorCode} and carrying its context. */
export class LocalError extends Error {
  override readonly name = 'LocalError';
  constructor(
    readonly code: LocalErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const TASK_NOT_FOUND = 'Failed to retrieve task: Task not found';

/**
 * A task id that names no task of the caller: unknown, expired, or someone else's, which must not be told apart
 * (T-ERR-1, T-SEC-1). On the wire it is -32602; the api counts it against the failed-lookup budget by its type.
 */
export class TaskNotFoundError extends ProtocolError {
  constructor() {
    super(ErrorCode.InvalidParams, TASK_NOT_FOUND);
  }
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: Record<string, unknown>;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

export function successResponse(id: JsonRpcId, result: Record<string, unknown>): JsonRpcSuccess {
  return { jsonrpc: '2.0', id, result };
}

export function errorResponse(id: JsonRpcId | null, error: JsonRpcErrorObject): JsonRpcFailure {
  return { jsonrpc: '2.0', id, error };
}
