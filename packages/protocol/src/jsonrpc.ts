// JSON-RPC 2.0 vocabulary: error codes and the one error class that travels on the wire. The runner's own failures
// are typed errors (errors.ts); the wires map them onto these codes in one place (apps/api/src/wires/errors.ts,
// with each wire's own table).

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
  // A string, not the literal: each subclass (ChildTaskError) names itself.
  override readonly name: string = 'ProtocolError';
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
