// The keys that sign the 2026-07-28 wire's requestStates (the api's request-state signer), one per rotation period,
// shared by every api replica through Redis: stored and read only here, so that the api keeps no Redis of its own.
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

export class SigningKeys {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
  ) {}

  /** The key of `period` as stored (`<generation>:<secret>`); undefined when there is none. */
  async read(period: number): Promise<string | undefined> {
    return (await this.redis.get(this.keys.requestStateKey(period))) ?? undefined;
  }

  /**
   * Stores `fresh` as the key of `period` for `lifetimeMs` unless it has one, and answers the key it has then: the
   * first replica to sign in a period creates its key, a concurrent one keeps the first (NX) and reads it.
   */
  async create(period: number, fresh: string, lifetimeMs: number): Promise<string | undefined> {
    const name = this.keys.requestStateKey(period);
    await this.redis.set(name, fresh, 'PX', lifetimeMs, 'NX');
    return (await this.redis.get(name)) ?? undefined;
  }
}
