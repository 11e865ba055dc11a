// Which connection of an upstream a call goes on (docs/gateway.md, "Connections" and "Affinity"). A lane is one
// connection and whose calls it carries: the shared lane carries anyone's calls that cannot be asked anything;
// a principal's or client session's lane carries only theirs, so that an upstream request naming no call can be
// relayed to the one call in flight without crossing to another principal.
import { createHash } from 'node:crypto';
import type { SessionStore } from '@mcp-tasks/engine';
import { MODERN_PROTOCOL_VERSIONS, type TaskRecord, type ToolContext } from '@mcp-tasks/protocol';
import type { UpstreamConfig } from './config.ts';

export interface Lane {
  /** `shared`, `p:<digest of the principal>` or `s:<digest of the client session>`. */
  key: string;
  /** An upstream request naming no call may go to the one call in flight (the lane carries one principal's calls). */
  relaysUnmarked: boolean;
  /** Its Streamable HTTP session is shared across workers through Redis (an affinity). */
  sharedAcrossWorkers: boolean;
}

export const SHARED_LANE: Lane = { key: 'shared', relaysUnmarked: false, sharedAcrossWorkers: false };

/** Who a call is for: its task's principal, its client session and what that client can answer. */
export interface CallOrigin {
  owner: string;
  sessionId: string;
  client(): Promise<{ capabilities: Record<string, unknown>; modern: boolean } | undefined>;
}

// Keyed by the run's context, as the resume point is, so that the gateway knows whom a call is for without the
// public ToolContext growing a member every tool would see.
const origins = new WeakMap<ToolContext, CallOrigin>();
/** A 2025-11-25 session's capabilities do not change: read once per session, a few thousand sessions at most. */
const sessionClients = new Map<string, { capabilities: Record<string, unknown>; modern: boolean }>();
const MAX_KEPT_SESSIONS = 4096;

/** Tells the gateway whom the run of `context` is for (run-tool.ts, for every run). */
export function attachCallOrigin(context: ToolContext, record: TaskRecord, sessions: Pick<SessionStore, 'get'>): void {
  origins.set(context, {
    owner: record.owner,
    sessionId: record.sessionId,
    client: async () => {
      const kept = sessionClients.get(record.sessionId);
      if (kept) return kept;
      const session = await sessions.get(record.sessionId);
      if (!session) return undefined;
      const client = {
        capabilities: session.clientCapabilities,
        modern: MODERN_PROTOCOL_VERSIONS.includes(session.protocolVersion),
      };
      // A 2026-07-28 request context serves one call: not worth keeping.
      if (!client.modern) {
        if (sessionClients.size >= MAX_KEPT_SESSIONS) sessionClients.clear();
        sessionClients.set(record.sessionId, client);
      }
      return client;
    },
  });
}

/**
 * The lane of a call. `stateless`: the shared lane, but for a call whose client can answer elicitation or sampling,
 * which goes on its principal's lane (there the upstream's requests reach it). `per-principal`: the principal's.
 * `per-client-session`: the 2025-11-25 session's (a 2026-07-28 request has none: its principal's).
 */
export async function laneOf(upstream: Pick<UpstreamConfig, 'affinity'>, context: ToolContext): Promise<Lane> {
  const origin = origins.get(context);
  if (!origin) return SHARED_LANE;
  const principal = keyed(`p:${digest(origin.owner)}`, upstream.affinity !== 'stateless');
  switch (upstream.affinity) {
    case 'stateless': {
      const client = await origin.client();
      const asks = client !== undefined && ('elicitation' in client.capabilities || 'sampling' in client.capabilities);
      return asks ? principal : SHARED_LANE;
    }
    case 'per-principal':
      return principal;
    case 'per-client-session': {
      const client = await origin.client();
      return client?.modern === false ? keyed(`s:${digest(origin.sessionId)}`, true) : principal;
    }
  }
}

function keyed(key: string, sharedAcrossWorkers: boolean): Lane {
  return { key, relaysUnmarked: true, sharedAcrossWorkers };
}

/** Principals and anonymous session ids are credentials: lanes and Redis keys name a digest of them. */
function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
}
