// The one place where a failure becomes a JSON-RPC error, per wire. Use cases and the engine throw typed errors in
// our words (packages/protocol/src/errors.ts); each revision gives them its codes here. A ProtocolError (a wire
// parse error, a stored outcome) goes out as it is; anything else is an internal error whose details stay in the log.
import {
  CallGoneError,
  ErrorCode,
  InvalidInputError,
  InvalidStateError,
  LimitExceededError,
  ModernErrorCode,
  ProtocolError,
  RequestCancelledError,
  TASKS_EXTENSION,
  TaskNotFoundError,
  TaskSupportError,
  UnavailableError,
  type JsonRpcErrorObject,
} from '@mcp-tasks/protocol';

export type Wire = 'legacy' | 'modern';

/** What the wire knows of the request that a message may name (the 2025-11-25 session's revision). */
export interface WireErrorContext {
  /** 2025-11-25: whether the session's revision has Tasks (a remedy for a required task names the revision). */
  sessionHasTasks?: boolean;
  protocolVersion?: string;
}

export const INTERNAL_ERROR: JsonRpcErrorObject = {
  code: ErrorCode.InternalError,
  message: 'Internal error; the server log has the details',
};

/** The JSON-RPC error a failure is answered with on `wire`, or undefined for a failure we did not foresee. */
export function wireErrorOf(
  error: unknown,
  wire: Wire,
  context: WireErrorContext = {},
): JsonRpcErrorObject | undefined {
  if (error instanceof ProtocolError) return error.toJSON();
  if (error instanceof TaskNotFoundError || error instanceof InvalidInputError || error instanceof InvalidStateError)
    return { code: ErrorCode.InvalidParams, message: error.message };
  if (error instanceof LimitExceededError) {
    const code = wire === 'legacy' ? ErrorCode.LimitExceeded : ModernErrorCode.LimitExceeded;
    return { code, message: error.message, data: { limit: error.limit, max: error.max, ...error.details } };
  }
  if (error instanceof TaskSupportError) return taskSupportError(error, wire, context);
  if (error instanceof RequestCancelledError) return { code: ErrorCode.RequestCancelled, message: error.message };
  if (error instanceof CallGoneError || error instanceof UnavailableError)
    return { code: ErrorCode.InternalError, message: error.message };
  return undefined;
}

/** As wireErrorOf, with the internal error for anything unforeseen. */
export function toWireError(error: unknown, wire: Wire, context?: WireErrorContext): JsonRpcErrorObject {
  return wireErrorOf(error, wire, context) ?? INTERNAL_ERROR;
}

function taskSupportError(error: TaskSupportError, wire: Wire, context: WireErrorContext): JsonRpcErrorObject {
  if (wire === 'modern') {
    // Only `required` reaches the 2026 wire: a forbidden tool simply runs synchronously there (X-NEG-11).
    return {
      code: ModernErrorCode.MissingRequiredClientCapability,
      message: `Tool '${error.tool}' runs only as a task: declare the '${TASKS_EXTENSION}' extension in this request`,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    };
  }
  if (error.support === 'forbidden')
    return { code: ErrorCode.MethodNotFound, message: `${error.message}; call it without params.task` };
  const remedy =
    context.sessionHasTasks === false
      ? `task-augmented calls need protocol 2025-11-25 (this session negotiated ${context.protocolVersion})`
      : 'add params.task';
  return { code: ErrorCode.MethodNotFound, message: `${error.message}; ${remedy}` };
}
