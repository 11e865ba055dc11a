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
    const replies = await this.redis.multi().hgetall(key).pexpire(key, this.idleTtlMs).exec();
    const hash = replies?.[0]?.[1] as Record<string, string> | undefined;
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

  async delete(sessionId: string): Promise<boolean> {
    return (await this.redis.del(this.keys.session(sessionId))) === 1;
  }
}
