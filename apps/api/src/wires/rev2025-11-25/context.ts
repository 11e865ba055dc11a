// What a 2025-11-25 method handler gets: its session, the request id, a signal for a client gone away, and the
// shared services.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger, RateCharge, RateVerdict, RequestOpening, Session, Span, TraceContext } from '@mcp-tasks/engine';
import type { JsonRpcId } from '@mcp-tasks/protocol';
import type { ApiServices } from '../../context.ts';
import type { StreamReply } from './stream-reply.ts';

export interface RequestContext {
  services: ApiServices;
  session: Session;
  requestId: JsonRpcId;
  /** The HTTP request's headers (a tools/call's Idempotency-Key). */
  headers: IncomingHttpHeaders;
  /** Aborts when the client closes the HTTP request before the answer. */
  signal: AbortSignal;
  /** The client accepts an SSE answer: long requests stream the task's messages before their answer. */
  canStream: boolean;
  /** The client's address (per-address rate limits, audit). */
  address: string;
  /**
   * The request's rate-limit verdict, reached as its session was read (calls/admission.ts); while `opening` is set, not
   * reached yet (ok).
   */
  admission: RateVerdict;
  /**
   * A request of a session this replica knows whose opening (existence check, idle timer, rate-limit count) is left
   * to the method's own script, so that it costs one round trip (session-gate.ts). The dispatcher reads
   * its outcome before answering; a handler whose work does not start with such a script settles it first
   * (`ensureOpened`).
   */
  opening?: DeferredOpening;
  log: Logger;
  /** While tracing is on: the request's span and the context its children start in (request-span.ts). */
  span?: Span;
  trace?: TraceContext;
}

/** A handler's answer: a result, or a task whose messages and final answer the transport streams. */
export type HandlerReply = Record<string, unknown> | StreamReply;

/** The opening of a request left to a method's script, and what it was charged (for the verdict). */
export interface DeferredOpening {
  opening: RequestOpening<Session>;
  charge: RateCharge;
}
