// The result mapping: what a tool produced -> the task's terminal status, statusMessage and stored outcome.
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from './jsonrpc.ts';
import { errorWithRelatedTask, withRelatedTask } from './meta.ts';
import type { CallToolResult } from './schemas.ts';
import type { Outcome, TaskRecord } from './task.ts';
import { TaskStatus } from './task-status.ts';

export interface Settlement {
  status: typeof TaskStatus.Completed | typeof TaskStatus.Failed | typeof TaskStatus.Cancelled;
  statusMessage: string;
  outcome: Outcome;
}

const STATUS_MESSAGE_LIMIT = 500;

/** A tool result settles the task: `isError: true` is a failure (T-LIFE-4) whose text becomes the diagnosis (T-LIFE-5). */
export function settleWithResult(result: CallToolResult): Settlement {
  if (result.isError === true) {
    const text = firstText(result);
    return {
      status: TaskStatus.Failed,
      statusMessage: clip(`Tool execution failed: ${text ?? 'the tool reported an error without text'}`),
      outcome: { result },
    };
  }
  return { status: TaskStatus.Completed, statusMessage: 'The operation completed.', outcome: { result } };
}

/**
 * A thrown error settles the task as failed with the JSON-RPC error the plain call would have answered: a
 * {@link ProtocolError} keeps its code, anything else is an internal error naming the tool.
 */
export function settleWithError(tool: string, error: unknown): Settlement {
  const wire = toolErrorToJsonRpc(tool, error);
  return { status: TaskStatus.Failed, statusMessage: clip(wire.message), outcome: { error: wire } };
}

export function toolErrorToJsonRpc(tool: string, error: unknown): JsonRpcErrorObject {
  if (error instanceof ProtocolError) return error.toJSON();
  const message = error instanceof Error ? error.message : String(error);
  return { code: ErrorCode.InternalError, message: `Tool '${tool}' failed: ${message}`, data: { tool } };
}

export const CANCELLED_STATUS_MESSAGE = 'The task was cancelled by request.';

/** A cancelled request has no result of its own; tasks/result answers this error (see docs/protocol.md). */
export function cancelledSettlement(statusMessage = CANCELLED_STATUS_MESSAGE): Settlement {
  return {
    status: TaskStatus.Cancelled,
    statusMessage,
    outcome: { error: { code: ErrorCode.RequestCancelled, message: `Task was cancelled: ${statusMessage}` } },
  };
}

/** A task whose execution was lost (its job vanished or BullMQ gave up on it) fails with an internal error. */
export function lostSettlement(statusMessage: string): Settlement {
  return {
    status: TaskStatus.Failed,
    statusMessage: clip(statusMessage),
    outcome: { error: { code: ErrorCode.InternalError, message: clip(statusMessage) } },
  };
}

/**
 * The tasks/result answer for a terminal record (T-RES-1, T-RES-3): the stored result with the related-task
 * `_meta`, or a {@link ProtocolError} carrying the stored JSON-RPC error.
 */
export function resultOf(record: TaskRecord): Record<string, unknown> {
  const outcome = record.outcome ?? cancelledSettlement(record.statusMessage).outcome;
  if ('error' in outcome) throw ProtocolError.from(errorWithRelatedTask(outcome.error, record.taskId));
  return withRelatedTask(outcome.result, record.taskId);
}

/** The plain tools/call answer: exactly the stored result or error, without task metadata. */
export function plainResultOf(record: TaskRecord): Record<string, unknown> {
  const outcome = record.outcome ?? cancelledSettlement(record.statusMessage).outcome;
  if ('error' in outcome) throw ProtocolError.from(outcome.error);
  return outcome.result;
}

function firstText(result: CallToolResult): string | undefined {
  for (const block of result.content) {
    if (block.type === 'text' && typeof block['text'] === 'string') return block['text'];
  }
  return undefined;
}

function clip(text: string): string {
  return text.length > STATUS_MESSAGE_LIMIT ? `${text.slice(0, STATUS_MESSAGE_LIMIT - 1)}…` : text;
}
