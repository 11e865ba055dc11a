// The 2025-11-25 wire's error table: its limit code, and a task-support refusal as -32601 with its remedy, which
// names the session's revision when that revision has no Tasks (the shared mapping is ../errors.ts).
import { ErrorCode, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import { toWireError as shared, wireErrorOf as sharedOf, type ErrorTable } from '../errors.ts';

/** What the wire knows of the request that a message may name: the session's revision. */
export interface ErrorContext {
  /** Whether the session's revision has Tasks (a remedy for a required task names the revision). */
  sessionHasTasks: boolean;
  protocolVersion: string;
}

export const ERRORS: ErrorTable<ErrorContext> = {
  limitExceeded: ErrorCode.LimitExceeded,
  taskSupport(error, context) {
    if (error.support === 'forbidden')
      return { code: ErrorCode.MethodNotFound, message: `${error.message}; call it without params.task` };
    const remedy =
      context.sessionHasTasks === false
        ? `task-augmented calls need protocol 2025-11-25 (this session negotiated ${context.protocolVersion})`
        : 'add params.task';
    return { code: ErrorCode.MethodNotFound, message: `${error.message}; ${remedy}` };
  },
};

export function wireErrorOf(error: unknown, context?: Partial<ErrorContext>): JsonRpcErrorObject | undefined {
  return sharedOf(error, ERRORS, context);
}

export function toWireError(error: unknown, context?: Partial<ErrorContext>): JsonRpcErrorObject {
  return shared(error, ERRORS, context);
}
