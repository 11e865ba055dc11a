// MCP sessions live in Redis so that any api replica serves any request of any session.
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

export interface Session {
  sessionId: string;
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
  createdAt: number;
  /** The context that owns the session's tasks: `session:<id>` without auth. */
  owner: string;
}

export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly idleTtlMs: number,
  ) {}

  async create(session: Session): Promise<void> {
    const key = this.keys.session(session.sessionId);
    await this.redis
      .multi()
      .hset(key, {
        sessionId: session.sessionId,
        protocolVersion: session.protocolVersion,
        clientCapabilities: JSON.stringify(session.clientCapabilities),
        clientInfo: JSON.stringify(session.clientInfo),
        createdAt: String(session.createdAt),
        owner: session.owner,
      })
      .pexpire(key, this.idleTtlMs)
      .exec();
  }

  /** The session, its idle timer restarted; undefined when it never existed, expired or was deleted. */
  async touch(sessionId: string): Promise<Session | undefined> {
    const key = this.keys.session(sessionId);
    // Two commands sent together, not a MULTI: they need no atomicity (PEXPIRE of a key gone meanwhile does
    // nothing), and every request pays for this one; a MULTI costs a pipeline object and two commands more.
    const [hash] = await Promise.all([this.redis.hgetall(key), this.redis.pexpire(key, this.idleTtlMs)]);
    return parseSession(hash);
  }

  /** The session without restarting its idle timer (for workers, which act for the session, not as it). */
  async get(sessionId: string): Promise<Session | undefined> {
    return parseSession(await this.redis.hgetall(this.keys.session(sessionId)));
  }

  async delete(sessionId: string): Promise<boolean> {
    return (await this.redis.del(this.keys.session(sessionId))) === 1;
  }
}

function parseSession(hash: Record<string, string> | null | undefined): Session | undefined {
  if (!hash || hash['sessionId'] === undefined) return undefined;
  return {
    sessionId: hash['sessionId'],
    protocolVersion: hash['protocolVersion'] ?? '',
    clientCapabilities: JSON.parse(hash['clientCapabilities'] ?? '{}') as Record<string, unknown>,
    clientInfo: JSON.parse(hash['clientInfo'] ?? '{}') as Record<string, unknown>,
    createdAt: Number(hash['createdAt']),
    owner: hash['owner'] ?? '',
  };
}
