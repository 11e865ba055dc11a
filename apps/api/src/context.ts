// The services every wire and use case shares (made in app.ts). What one request's handler gets is each wire's own
// (wires/rev*/context.ts).
import type {
  InputBroker,
  Logger,
  RateLimiter,
  RunnerMetrics,
  SessionEvents,
  SessionStore,
  ConnectionSlots,
  Subscriber,
  TaskService,
  TaskStore,
  WebhookSettings,
} from '@mcp-tasks/engine';
import type { Authenticator } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { RequestStateSigner } from './request-state.ts';
import type { TaskHandles } from './calls/handle-policy.ts';
import type { PlainCalls } from './calls/plain-calls.ts';
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
  /** Signs and checks the MRTR requestState of 2026-07-28 synchronous calls (request-state.ts). */
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
