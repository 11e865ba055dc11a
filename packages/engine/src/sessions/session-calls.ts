// The plain calls of a session by JSON-RPC request id (the api's calls/plain-calls.ts): what notifications/cancelled
// names a call by. A hash per session (keys.ts sessionCalls): a call is filed by the step that creates it
// (create-task-6.lua `filed`), so the entry exists exactly when its call does, and leaves when the call ends
// (take-ended-13.lua, or `forget` here), is handed out or cancelled. The api keeps no Redis of its own.
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';

export class SessionCalls {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
  ) {}

  /** The task of the session's call `requestKey`, if it is filed. */
  async taskOf(sessionId: string, requestKey: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.sessionCalls(sessionId), requestKey)) ?? undefined;
  }

  /** Forgets the session's call `requestKey` (it ended, was handed out or cancelled). */
  async forget(sessionId: string, requestKey: string): Promise<void> {
    await this.redis.hdel(this.keys.sessionCalls(sessionId), requestKey);
  }
}
