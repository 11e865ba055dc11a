// Input requests a task's tool sent its client (elicitation, sampling: T-INPUT-*, X-UPD-*), and the client's answers:
// each routed to the worker waiting for it, on whichever replica it arrives (the request lives in Redis).
import type { AnswerVerdict, InputAnswer } from '@mcp-tasks/engine';
import type { InputRequest, TaskRecord } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';
import type { CallContext } from './request.ts';

/** The task's input requests still waiting for an answer, keyed by their ids (unique for the task's life). */
export function outstandingInputs(services: ApiServices, record: TaskRecord): Promise<Record<string, InputRequest>> {
  return services.events.outstandingInputs(record);
}

/**
 * Answers the task's requests by the keys its client was shown (2026-07-28 tasks/update and MRTR
 * `inputResponses`), and withdraws each answered one in the same request, so the next read no longer shows it
 * (X-UPD-5). Unknown, answered or superseded keys and malformed values are ignored.
 */
export async function answerTaskInputs(
  context: Pick<CallContext, 'services' | 'log'>,
  record: TaskRecord,
  entries: [string, unknown][],
): Promise<void> {
  const { services } = context;
  const target = { sessionId: record.sessionId, owner: record.owner };
  const requestIds = new Map<string, string>();
  for (const pending of await services.events.pendingInputs(record.sessionId)) {
    if (pending.taskId === record.taskId) requestIds.set(pending.key ?? pending.requestId, pending.requestId);
  }
  for (const [key, value] of entries) {
    const requestId = requestIds.get(key);
    if (requestId === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const verdict = await services.inputs.answer(target, requestId, { result: value as Record<string, unknown> });
    if (verdict === 'accepted') await services.events.withdrawInput(record.sessionId, requestId);
    context.log.debug('input answered', { taskId: record.taskId, key, verdict });
  }
}

/**
 * A 2025-11-25 client's JSON-RPC response to one of our requests, by its id: routed to the waiting worker when the
 * request is this session's and still open.
 */
export function answerInputById(
  services: ApiServices,
  session: { sessionId: string; owner: string },
  requestId: string | number,
  answer: InputAnswer,
): Promise<AnswerVerdict> {
  return services.inputs.answer(session, requestId, answer);
}
