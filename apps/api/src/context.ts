// What a JSON-RPC method handler gets: its session, the request id, a signal for a client gone away, and the
// shared services.
import type {
  InputBroker,
  Logger,
  RateCharge,
  RateLimiter,
  RateVerdict,
  RequestOpening,
  RunnerMetrics,
  Session,
  SessionEvents,
  SessionStore,
  ConnectionSlots,
  Span,
  Subscriber,
  TaskService,
  TaskStore,
  TraceContext,
  WebhookSettings,
} from '@mcp-tasks/engine';
import type { IncomingHttpHeaders } from 'node:http';
import type { JsonRpcId } from '@mcp-tasks/protocol';
import type { Authenticator } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { RequestStateSigner } from './modern/request-state.ts';
import type { TaskHandles } from './calls/handle-policy.ts';
import type { PlainCalls } from './calls/plain-calls.ts';
import type { StreamReply } from './stream-reply.ts';
import type { ApiTools } from './tool-catalog.ts';

export interface ApiServices {
  config: ApiConfig;
  log: Logger;
  store: TaskStore;
  sessions: SessionStore;
  tasks: TaskService;
  plainCalls: PlainCalls;
  /** Task handles for clients that did not negotiate Tasks (calls/handles.ts, docs/clients.md). */
  handles: TaskHandles;
  /** The live tool catalog (docs/catalog.md). */
  tools: ApiTools;
  /** Signs and checks the MRTR requestState of 2026-07-28 synchronous calls (modern/request-state.ts). */
  requestStates: RequestStateSigner;
  events: SessionEvents;
  inputs: InputBroker;
  subscriber: Subscriber;
  metrics: RunnerMetrics;
  security: SecurityServices;
  /** Calls' webhooks and principals' configured ones (docs/webhooks.md). */
  webhooks: WebhookSettings;
  /** Aborts when the replica begins to stop: what it holds open ends in good order (listen streams, C26-SUB-5). */
  stopping: AbortSignal;
}

/** Authentication, rate limits, connection slots and the audit trail (docs/configuration.md, "Security"). */
export interface SecurityServices {
  auth: Authenticator;
  rates: RateLimiter;
  connections: ConnectionSlots;
  /** The audit child logger (`audit: true`); write to it with `audit()` from the engine. */
  audit: Logger;
}

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
   * to the method's own script, so that it costs one round trip (transport/session-gate.ts). The dispatcher reads
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
