// The cap on connections a session holds open (SSE streams, and requests that block on a task without SSE),
// counted in Redis so that it holds across api replicas. Each holds a lease its replica renews; a dead replica's
// leases run out.
import { randomUUID } from 'node:crypto';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';
import { RedisScripts } from '../scripts.ts';

export interface ConnectionSlot {
  /** Gives the slot back (idempotent). */
  release(): Promise<void>;
}

export class ConnectionSlots {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    /** The most streams one session may have open; 0: no limit. */
    readonly maxPerSession: number,
    readonly leaseMs = 30_000,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /** A slot for one more stream of the session, renewed until released; undefined when the session is at the cap. */
  async acquire(sessionId: string): Promise<ConnectionSlot | undefined> {
    if (this.maxPerSession === 0) return { release: () => Promise.resolve() };
    const key = this.keys.sessionConnections(sessionId);
    const id = randomUUID();
    const { opened } = await this.#scripts.acquireConnectionSlot({
      keys: { streams: key },
      streamId: id,
      now: Date.now(),
      leaseMs: this.leaseMs,
      limit: this.maxPerSession,
    });
    if (!opened) return undefined;
    const renew = setInterval(
      () => {
        this.redis
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
        await this.redis.zrem(key, id);
      },
    };
  }
}
