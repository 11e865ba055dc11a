// The context of one 2026-07-28 request that starts work: what its worker reads of the client (its capabilities)
// where it reads a session's (SessionStore.get). It is written by the create script with the task it belongs to
// (records/store.ts), so that a call refused on the way stores nothing.

/** A request context as stored: not a session, and no client can name it (its id is never sent). */
export interface RequestContextRecord {
  id: string;
  owner: string;
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
  createdAt: number;
}

/** Its hash fields: those of a session (sessions.ts), so that a worker reads either the same way. */
export function requestContextFields(context: RequestContextRecord): Record<string, string> {
  return {
    sessionId: context.id,
    protocolVersion: context.protocolVersion,
    clientCapabilities: JSON.stringify(context.clientCapabilities),
    clientInfo: JSON.stringify(context.clientInfo),
    createdAt: String(context.createdAt),
    owner: context.owner,
  };
}
