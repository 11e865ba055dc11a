// The one place where a failure becomes a JSON-RPC error. Use cases and the engine throw typed errors in our words
// (packages/protocol/src/errors.ts); what every revision says alike is here, and each wire's error table
// (rev*/errors.ts) gives the rest its codes. A ProtocolError (a wire parse error, a stored outcome) goes out as it
// is; anything else is an internal error whose details stay in the log.
import {
  CallGoneError,
  ErrorCode,
  InvalidInputError,
  InvalidStateError,
  LimitExceededError,
  ProtocolError,
  RequestCancelledError,
  TaskNotFoundError,
  TaskSupportError,
  UnavailableError,
  type JsonRpcErrorObject,
} from '@mcp-tasks/protocol';

/** What a revision says differently: its own codes and remedies. */
export interface ErrorTable<C = Record<string, never>> {
  /** The code of a limit reached (LimitExceededError). */
  readonly limitExceeded: number;
  /** A tool's task support refusing the call as made. */
  taskSupport(error: TaskSupportError, context: Partial<C>): JsonRpcErrorObject;
}

export const INTERNAL_ERROR: JsonRpcErrorObject = {
  code: ErrorCode.InternalError,
  message: 'Internal error; the server log has the details',
};

/** The JSON-RPC error a failure is answered with under `table`, or undefined for a failure we did not foresee. */
export function wireErrorOf<C>(
  error: unknown,
  table: ErrorTable<C>,
  context: Partial<C> = {},
): JsonRpcErrorObject | undefined {
  if (error instanceof ProtocolError) return error.toJSON();
  if (error instanceof TaskNotFoundError || error instanceof InvalidInputError || error instanceof InvalidStateError)
    return { code: ErrorCode.InvalidParams, message: error.message };
  if (error instanceof LimitExceededError) {
    return {
      code: table.limitExceeded,
      message: error.message,
      data: { limit: error.limit, max: error.max, ...error.details },
    };
  }
  if (error instanceof TaskSupportError) return table.taskSupport(error, context);
  if (error instanceof RequestCancelledError) return { code: ErrorCode.RequestCancelled, message: error.message };
  if (error instanceof CallGoneError || error instanceof UnavailableError)
    return { code: ErrorCode.InternalError, message: error.message };
  return undefined;
}

/** As wireErrorOf, with the internal error for anything unforeseen. */
export function toWireError<C>(error: unknown, table: ErrorTable<C>, context?: Partial<C>): JsonRpcErrorObject {
  return wireErrorOf(error, table, context) ?? INTERNAL_ERROR;
}
