// The cap on open SSE streams per session (GET streams and answer streams), counted in Redis so that it holds
// across api replicas. An open stream holds a lease its replica renews; a dead replica's leases run out.
import { randomUUID } from 'node:crypto';
import type { KeySpace } from './keys.ts';
import { withScripts, type RedisClient, type RunnerScripts } from './redis.ts';

export interface StreamSlot {
  /** Gives the slot back (idempotent). */
  release(): Promise<void>;
}

export class StreamSlots {
  readonly #redis: RedisClient & RunnerScripts;

  constructor(
    redis: RedisClient,
    private readonly keys: KeySpace,
    /** The most streams one session may have open; 0: no limit. */
    readonly maxPerSession: number,
    readonly leaseMs = 30_000,
  ) {
    this.#redis = withScripts(redis);
  }

  /** A slot for one more stream of the session, renewed until released; undefined when the session is at the cap. */
  async acquire(sessionId: string): Promise<StreamSlot | undefined> {
    if (this.maxPerSession === 0) return { release: () => Promise.resolve() };
    const key = this.keys.sessionStreams(sessionId);
    const id = randomUUID();
    const [opened] = await this.#redis.acquireStream(
      key,
      id,
      String(Date.now()),
      String(this.leaseMs),
      String(this.maxPerSession),
    );
    if (opened !== 1) return undefined;
    const renew = setInterval(
      () => {
        this.#redis
          .multi()
          .zadd(key, 'XX', Date.now() + this.leaseMs, id)
          .pexpire(key, this.leaseMs * 2)
          .exec()
          .catch(() => undefined);
      },
      Math.max(1000, Math.floor(this.leaseMs / 3)),
    );
    renew.unref();
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(renew);
        await this.#redis.zrem(key, id);
      },
    };
  }
}
