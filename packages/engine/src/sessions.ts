// MCP sessions live in Redis so that any api replica serves any request of any session.
import type { KeySpace } from './keys.ts';
import type { RateCharge } from './rate-limiter.ts';
import { withScripts, type RedisClient, type RunnerScripts } from './redis.ts';

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
  readonly #redis: RedisClient & RunnerScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly idleTtlMs: number,
  ) {
    this.#redis = withScripts(redis);
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
    const reply = await this.#redis.touchSession(
      this.keys.session(sessionId),
      ...charge.keys,
      String(this.idleTtlMs),
      ...charge.args,
    );
    const [refused, ...flat] = reply;
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[String(flat[i])] = String(flat[i + 1]);
    const session = parseSession(hash);
    return session ? { session, refused: Number(refused) } : undefined;
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
