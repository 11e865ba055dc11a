// What a 2026-07-28 method handler gets: no session, only what this one request says (C26-SES-2) — its caller
// (principal or address), its declared capabilities, its id — and the shared services.
import type { Response } from 'express';
import type { Logger, RateVerdict, Span, TraceContext } from '@mcp-tasks/engine';
import { TASKS_EXTENSION, type JsonRpcId } from '@mcp-tasks/protocol';
import type { CallContext } from '../../calls/request.ts';
import type { ApiServices } from '../../context.ts';
import type { ModernRequest } from './classify.ts';

export interface Caller {
  /** Whom the request's tasks belong to: `principal:<name>` with authentication, else `anonymous:<address>`. */
  owner: string;
  /** With authentication, tasks are read only by their owner; without, the task id is the capability (X-SEC-2). */
  authenticated: boolean;
  address: string;
}

export interface ModernContext {
  services: ApiServices;
  caller: Caller;
  request: ModernRequest;
  requestId: JsonRpcId;
  /** Aborts when the client closes the request (C26-SSE-4: that cancels a synchronous call). */
  signal: AbortSignal;
  /** The client takes an SSE answer (progress of a synchronous call travels on it). */
  canStream: boolean;
  admission: RateVerdict;
  log: Logger;
  /** The HTTP response, for the handlers that answer with a stream of their own (subscriptions/listen). */
  res: Response;
  /** The request span's context while tracing is on: a task created here carries it to its job. */
  trace?: TraceContext;
  /** The request's span while tracing is on (a task created here sets its id on it, as on 2025-11-25). */
  span?: Span;
  /**
   * Sends the progress notifications of a synchronous call found in its event stream after `cursor` (only when
   * the request asked for progress and takes SSE; the answer then ends that stream), and returns the new cursor.
   */
  forwardProgress(sessionId: string, cursor: string): Promise<string>;
  /**
   * While a synchronous call waits on a request that asked for progress and takes SSE: the keep-alive progress that
   * keeps a client resetting its timeout on progress from timing out (progress-keepalive.ts); absent otherwise.
   */
  keepAlive?: { dueIn(): number; send(): void };
}

/** A handler's answer: a result, or a stream it writes itself (a tools/call with progress, subscriptions/listen). */
export type ModernReply = Record<string, unknown> | { streamed: true };

/** Whether this request (and only this one, X-NEG-1/2) declared the tasks extension. */
export function declaresTasks(capabilities: Record<string, unknown>): boolean {
  const extensions = capabilities['extensions'];
  return typeof extensions === 'object' && extensions !== null && Object.hasOwn(extensions, TASKS_EXTENSION);
}

const made = new WeakMap<ModernContext, CallContext>();

/** The request as the use cases see it: no session; without authentication a task id is its capability (X-SEC-2). */
export function callContextOf(context: ModernContext): CallContext {
  let call = made.get(context);
  if (call) return call;
  const { caller } = context;
  call = {
    services: context.services,
    caller: {
      owner: caller.owner,
      address: caller.address,
      requestId: context.requestId,
      readsByCapability: !caller.authenticated,
    },
    log: context.log,
    ...(context.span ? { span: context.span } : {}),
  };
  made.set(context, call);
  return call;
}
