// What a JSON-RPC method handler gets: its session, the request id, a signal for a client gone away, and the
// shared services.
import type { Logger, Session, SessionStore, TaskService, TaskStore } from '@mcp-tasks/engine';
import type { JsonRpcId, ToolRegistry } from '@mcp-tasks/protocol';
import type { ApiConfig } from './config.ts';

export interface ApiServices {
  config: ApiConfig;
  log: Logger;
  store: TaskStore;
  sessions: SessionStore;
  tasks: TaskService;
  tools: ToolRegistry;
}

export interface RequestContext {
  services: ApiServices;
  session: Session;
  requestId: JsonRpcId;
  /** Aborts when the client closes the HTTP request before the answer. */
  signal: AbortSignal;
  log: Logger;
}

export type MethodHandler = (
  params: Record<string, unknown> | undefined,
  context: RequestContext,
) => Promise<Record<string, unknown>>;
