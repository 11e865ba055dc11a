// The 2025-11-25 dispatcher: method name -> its entry in the table (table.ts); unknown methods get -32601. The
// rate limits are applied here (T-SEC-3), and every failure is answered with its wire error (errors.ts).
import { supportsTasks, ErrorCode, type JsonRpcErrorObject } from '@mcp-tasks/protocol';
import { admit, isFailedLookup, lookedUpTaskId, noteFailedLookup } from '../../calls/admission.ts';
import type { DeferredOpening, HandlerReply, RequestContext } from './context.ts';
import { StreamReply } from './stream-reply.ts';
import { INTERNAL_ERROR } from '../errors.ts';
import { wireErrorOf } from './errors.ts';
import { callContextOf } from './call-context.ts';
import { LEGACY_METHODS } from './table.ts';

export type DispatchOutcome =
  | { result: Record<string, unknown> }
  | { error: JsonRpcErrorObject }
  | { stream: StreamReply }
  /** The request's session is gone, as the method's script found opening the request (HTTP 404). */
  | { sessionGone: true };

/** Whether this wire serves `method` (a request span is named after it only then). */
export function isLegacyMethod(method: string): boolean {
  return LEGACY_METHODS.has(method);
}

export async function dispatch(
  method: string,
  params: Record<string, unknown> | undefined,
  context: RequestContext,
): Promise<DispatchOutcome> {
  // With tasks/list off (TASKS_LIST_ENABLED=false) the method does not exist, as the capability says (T-SEC-2).
  const disabled = method === 'tasks/list' && !context.services.config.TASKS_LIST_ENABLED;
  const entry = disabled ? undefined : LEGACY_METHODS.get(method);
  if (!entry) {
    context.services.metrics.reject(ErrorCode.MethodNotFound);
    return { error: { code: ErrorCode.MethodNotFound, message: `Method not found: '${method}'` } };
  }
  let answer: { reply: HandlerReply } | { error: unknown };
  try {
    if (!context.opening) admit(context.services, callContextOf(context).caller, method, context.admission);
    answer = { reply: await entry.handle(params, context) };
  } catch (error) {
    answer = { error };
  }
  if (context.opening) {
    // Opened by the method's script, or now: a refusal replaces the answer (the handler wrote nothing before).
    try {
      if (await refusedOpening(method, context)) return { sessionGone: true };
    } catch (refusal) {
      answer = { error: refusal };
    }
  }
  if ('reply' in answer) {
    const { reply } = answer;
    return reply instanceof StreamReply ? { stream: reply } : { result: reply };
  }
  return { error: await answerFailure(method, params, answer.error, context) };
}

/** The wire error of a failure; a failed lookup is counted, anything unforeseen logged with its stack. */
async function answerFailure(
  method: string,
  params: Record<string, unknown> | undefined,
  failure: unknown,
  context: RequestContext,
): Promise<JsonRpcErrorObject> {
  const { protocolVersion } = context.session;
  const error = wireErrorOf(failure, { sessionHasTasks: supportsTasks(protocolVersion), protocolVersion });
  if (!error) {
    context.log.error('request failed', { method, requestId: context.requestId, error: describe(failure) });
    return INTERNAL_ERROR;
  }
  const { handles } = context.services;
  const handleTool = handles.toolOf(handles.offeredToSession(context.session), String(params?.['name'])) !== undefined;
  if (isFailedLookup(method, failure, handleTool))
    await noteFailedLookup(context.services, callContextOf(context).caller, method, lookedUpTaskId(method, params));
  context.services.metrics.reject(error.code);
  return error;
}

/**
 * Reads how the request's deferred opening went (RequestOpening): true when its session is gone; a rate-limit
 * refusal throws the error the gate would have (audited as there).
 */
async function refusedOpening(method: string, context: RequestContext): Promise<boolean> {
  const { opening, charge } = context.opening as DeferredOpening;
  const opened = await opening.settle();
  if (opened < 0) return true;
  if (opened > 0) {
    const verdict = context.services.security.rates.verdictOf(charge, opened);
    admit(context.services, callContextOf(context).caller, method, verdict);
  }
  return false;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
