// Redis connections as BullMQ wants them, and the Lua scripts of the runner.
import { readFileSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';
import type { RedisEnv } from './config.ts';
import { clusterOptions, parseClusterNodes } from './redis-target.ts';

/** One Redis server or a Redis Cluster; every key the runner touches in one command shares a slot either way. */
export type RedisClient = Redis | Cluster;

// Back off up to 2 s between reconnect attempts, for ever: a restarted Redis is picked up on its own.
const reconnectDelay = (times: number) => Math.min(times * 100, 2000);

/**
 * A connection usable by BullMQ workers too (`maxRetriesPerRequest: null`): it waits out Redis restarts. Given a
 * URL, a connection to that server; given the configuration, a `Cluster` when REDIS_CLUSTER_NODES is set.
 */
export function createRedis(url: string, connectionName: string): Redis;
export function createRedis(
  env: Pick<RedisEnv, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>,
  connectionName: string,
): RedisClient;
export function createRedis(
  target: string | Pick<RedisEnv, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>,
  connectionName: string,
): RedisClient {
  if (typeof target !== 'string' && target.REDIS_CLUSTER_NODES !== undefined) {
    return createCluster(target.REDIS_CLUSTER_NODES, connectionName);
  }
  return new Redis(typeof target === 'string' ? target : target.REDIS_URL, {
    maxRetriesPerRequest: null,
    connectionName,
    retryStrategy: reconnectDelay,
  });
}

function createCluster(nodesValue: string, connectionName: string): Cluster {
  const seeds = parseClusterNodes(nodesValue);
  return new Cluster(seeds.nodes, clusterOptions(seeds, connectionName));
}

/** Closes a connection, waiting for pending replies when it is healthy, at once when it is not. */
export async function closeRedis(redis: RedisClient): Promise<void> {
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

export const TRANSITION_SCRIPT = lua('transition-3.lua');
const GET_OWNED_SCRIPT = lua('get-owned-1.lua');
const CREATE_TASK_SCRIPT = lua('create-task-6.lua');
const ANSWER_INPUT_SCRIPT = lua('answer-input-1.lua');
const TOUCH_SESSION_SCRIPT = lua('touch-session-6.lua');
const RECORD_FAILURE_SCRIPT = lua('record-failure-3.lua');
const ACQUIRE_STREAM_SCRIPT = lua('acquire-stream-1.lua');

export interface RunnerScripts {
  transitionTask(
    taskKey: string,
    liveKey: string,
    sessionEventsKey: string,
    to: string,
    allowedFrom: string,
    now: string,
    statusMessage: string,
    outcome: string,
    terminal: string,
    channel: string,
    taskId: string,
    sessionChannel: string,
    streamIdleMs: string,
    streamMaxLength: string,
    pendingDelta: string,
  ): Promise<string[]>;
  getOwnedTask(taskKey: string, owner: string): Promise<string[]>;
  createTask(...keysThenArgs: string[]): Promise<number[]>;
  answerInput(requestKey: string, sessionId: string, owner: string, answer: string, channel: string): Promise<number>;
  touchSession(...keysThenArgs: string[]): Promise<(number | string)[]>;
  recordLookupFailure(
    principalBucket: string,
    addressBucket: string,
    countersKey: string,
    windowMs: string,
    counter: string,
  ): Promise<number>;
  acquireStream(streamsKey: string, streamId: string, now: string, leaseMs: string, limit: string): Promise<number[]>;
}

/** Registers our scripts on a connection (EVALSHA with automatic fallback to EVAL). */
export function withScripts(redis: RedisClient): RedisClient & RunnerScripts {
  if (!('transitionTask' in redis)) {
    redis.defineCommand('transitionTask', { numberOfKeys: 3, lua: TRANSITION_SCRIPT });
  }
  if (!('getOwnedTask' in redis)) {
    redis.defineCommand('getOwnedTask', { numberOfKeys: 1, lua: GET_OWNED_SCRIPT });
    redis.defineCommand('createTask', { numberOfKeys: 6, lua: CREATE_TASK_SCRIPT });
    redis.defineCommand('answerInput', { numberOfKeys: 1, lua: ANSWER_INPUT_SCRIPT });
    redis.defineCommand('touchSession', { numberOfKeys: 6, lua: TOUCH_SESSION_SCRIPT });
    redis.defineCommand('recordLookupFailure', { numberOfKeys: 3, lua: RECORD_FAILURE_SCRIPT });
    redis.defineCommand('acquireStream', { numberOfKeys: 1, lua: ACQUIRE_STREAM_SCRIPT });
  }
  return redis as RedisClient & RunnerScripts;
}
