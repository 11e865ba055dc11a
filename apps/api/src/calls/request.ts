// What every use case is given, whichever wire the request came in on: who asks (Caller), where the work's
// messages go and what its client can answer (ClientContext), and the request of a tool call, normalized.
import type { Logger, RequestOpening, Span, TraceCarrier } from '@mcp-tasks/engine';
import type { CatalogEntry, JsonRpcId } from '@mcp-tasks/protocol';
import type { ApiServices } from '../context.ts';

export interface Caller {
  /**
   * Whom the request's tasks belong to: `principal:<name>` with authentication; without it, `session:<id>` on
   * 2025-11-25 and `anonymous:<address>` on 2026-07-28.
   */
  owner: string;
  address: string;
  requestId: JsonRpcId;
  /** The 2025-11-25 session the request belongs to, for the audit trail; absent on 2026-07-28. */
  sessionId?: string;
  /**
   * Without authentication on 2026-07-28 a task id is the capability to read its task (X-SEC-2), for tasks created
   * without authentication only; everywhere else the task's owner must be the caller.
   */
  readsByCapability: boolean;
}

/** What a use case works with: the services, who asks, and the request's log and trace. */
export interface CallContext {
  services: ApiServices;
  caller: Caller;
  log: Logger;
  /** While tracing is on: the request's span (it gets the task id). */
  span?: Span;
}

/**
 * Where a call's messages (status, progress, input requests) are filed, and what its client can answer: a 2025-11-25
 * session (stored when it was initialized), or the context of one 2026-07-28 request, which carries its own
 * capabilities and is stored with the call it starts.
 */
export type ClientContext =
  | { kind: 'session'; id: string }
  | {
      kind: 'request';
      id: string;
      protocolVersion: string;
      clientCapabilities: Record<string, unknown>;
      clientInfo: Record<string, unknown>;
    };

/**
 * How the request asks to run the tool: `task` (2025-11-25 `params.task`: a tool that forbids tasks is an error),
 * `plain` (no task: a tool that requires one is an error), or `task-if-allowed` (2026-07-28 with the tasks
 * extension declared: a task unless the tool forbids it, then a synchronous call).
 */
export type Execution = 'task' | 'plain' | 'task-if-allowed';

/** A tools/call, normalized: each wire parses its own params into this. */
export interface CallRequest {
  client: ClientContext;
  tool: string;
  arguments: unknown;
  execution: Execution;
  /** The ttl the client asked for (2025-11-25 `task.ttl`); absent: the default (T-CREATE-2). */
  requestedTtl?: number;
  /** Where progress notifications are addressed; absent: the tool's progress is not sent. */
  progressToken?: string | number;
  /** The request's trace context, carried to the job's spans (tracing on only). */
  trace?: TraceCarrier;
  /**
   * The call's idempotency key (the `Idempotency-Key` header or RunnerMeta.IdempotencyKey, calls/idempotency.ts):
   * a task call under a key that names a live task of the caller's answers that task (docs/durable-execution.md).
   */
  idempotencyKey?: string;
  /** The call's `_meta` webhook (RunnerMeta.Webhook) as sent, checked by prepareCall (calls/webhooks.ts). */
  webhook?: unknown;
  /**
   * The caller gets task handles (calls/handles.ts): a plain call still running at its deadline is handed out. With
   * `requiredTools`, a tool that requires a task may be called plainly too (2025-11-25, where such a session's
   * tools/list shows it optional); without, such a call is refused as before (2026-07-28, X-NEG-5).
   */
  handles?: { requiredTools: boolean };
  /** The wire's own checks of the tool, before anything runs (2026-07-28: `Mcp-Param-*` headers, C26-HDR-4). */
  admitTool?: (tool: CatalogEntry) => void;
  /**
   * A request of a known 2025-11-25 session whose opening (existence, idle timer, rate-limit count) is left to the
   * create script: the task costs one round trip (RequestOpening).
   */
  opening?: RequestOpening;
}
