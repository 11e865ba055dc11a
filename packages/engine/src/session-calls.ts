// The plain calls of a session by JSON-RPC request id (the api's calls/plain-calls.ts): what notifications/cancelled
// names a call by. A hash per session, written only here, so that the api keeps no Redis of its own.
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

export class SessionCalls {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
  ) {}

  /**
   * Files the call `taskId` under its request id (`requestKey`: the id as JSON, so that 1 and "1" differ). The hash
   * lives as long as its longest-lived call may (NX sets the first expiry, GT only ever extends it): a short call
   * never cuts a longer one's entry short, and the entries themselves leave as their calls end.
   */
  async remember(sessionId: string, requestKey: string, taskId: string, ttlMs: number): Promise<void> {
    const key = this.keys.sessionCalls(sessionId);
    await this.redis.multi().hset(key, requestKey, taskId).pexpire(key, ttlMs, 'NX').pexpire(key, ttlMs, 'GT').exec();
  }

  /** The task of the session's call `requestKey`, if it is filed. */
  async taskOf(sessionId: string, requestKey: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.sessionCalls(sessionId), requestKey)) ?? undefined;
  }

  /** Forgets the session's call `requestKey` (it ended, was handed out or cancelled). */
  async forget(sessionId: string, requestKey: string): Promise<void> {
    await this.redis.hdel(this.keys.sessionCalls(sessionId), requestKey);
  }
}
