// The 2026-07-28 wire's error table: its limit code (C26-ERR-2), and a task-support refusal as the missing
// capability it is (the shared mapping is ../errors.ts).
import { ModernErrorCode, TASKS_EXTENSION, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import { toWireError as shared, wireErrorOf as sharedOf, type ErrorTable } from '../errors.ts';

export const ERRORS: ErrorTable = {
  limitExceeded: ModernErrorCode.LimitExceeded,
  // Only `required` reaches this wire: a forbidden tool simply runs synchronously here (X-NEG-11).
  taskSupport: (error) => ({
    code: ModernErrorCode.MissingRequiredClientCapability,
    message: `Tool '${error.tool}' runs only as a task: declare the '${TASKS_EXTENSION}' extension in this request`,
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  }),
};

export function wireErrorOf(error: unknown): JsonRpcErrorObject | undefined {
  return sharedOf(error, ERRORS);
}

export function toWireError(error: unknown): JsonRpcErrorObject {
  return shared(error, ERRORS);
}
