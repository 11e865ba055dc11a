// MCP sessions live in Redis so that any api replica serves any request of any session.
import type { KeySpace } from './keys.ts';
import type { RateCharge } from './rate-limiter.ts';
import type { RedisClient } from './redis.ts';
import { RedisScripts } from './scripts.ts';

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
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly idleTtlMs: number,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

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

  /**
   * The session, its idle timer restarted, and the request counted against the rate limits of `charge`; undefined
   * when the session never existed, expired or was deleted (then nothing is counted). One round trip: every
   * request pays for it. `refused` is the number of the bucket that refused the request (RateLimiter.verdictOf).
   */
  async touch(sessionId: string, charge: RateCharge): Promise<{ session: Session; refused: number } | undefined> {
    const touched = await this.#scripts.touchSession({
      keys: { session: this.keys.session(sessionId), counters: charge.countersKey },
      buckets: charge.buckets,
      idleMs: this.idleTtlMs,
      windowMs: charge.windowMs,
      refusalCounters: charge.refusalCounters,
    });
    const session = parseSession(touched?.fields);
    return session && touched ? { session, refused: touched.refused } : undefined;
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
