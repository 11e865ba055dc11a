// Redis connections as BullMQ wants them, and the Lua scripts of the runner.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

export type RedisClient = Redis;

/** A connection usable by BullMQ workers too (`maxRetriesPerRequest: null`): it waits out Redis restarts. */
export function createRedis(url: string, connectionName: string): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName,
    // Back off up to 2 s between reconnect attempts, for ever: a restarted Redis is picked up on its own.
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
  return redis;
}

/** Closes a connection, waiting for pending replies when it is healthy, at once when it is not. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

function lua(name: string): string {
  return readFileSync(new URL(`./lua/${name}`, import.meta.url), 'utf8');
}

export const TRANSITION_SCRIPT = lua('transition-2.lua');

export interface RunnerScripts {
  transitionTask(
    taskKey: string,
    liveKey: string,
    to: string,
    allowedFrom: string,
    now: string,
    statusMessage: string,
    outcome: string,
    terminal: string,
    channel: string,
    taskId: string,
  ): Promise<string[]>;
}

/** Registers our scripts on a connection (EVALSHA with automatic fallback to EVAL). */
export function withScripts(redis: Redis): Redis & RunnerScripts {
  if (!('transitionTask' in redis)) {
    redis.defineCommand('transitionTask', { numberOfKeys: 2, lua: TRANSITION_SCRIPT });
  }
  return redis as Redis & RunnerScripts;
}
