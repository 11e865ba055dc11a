// Redis connections as BullMQ wants them (the Lua scripts of the runner are in scripts.ts).
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

/**
 * Lets the commands that one pass of the event loop sends on `redis` leave in one write. ioredis writes each
 * command to its socket at once, a system call each: a tenth of the api's CPU and a quarter of a worker's under load
 * (docs/benchmarks.md). Corked at the first command, the socket sends everything written meanwhile together once
 * the pass has handled the I/O that was ready (setImmediate: the check phase, right after the poll phase): the
 * commands that concurrent requests and replies arriving together send share one write. The poll phase does not
 * block while the uncork is pending, so no command waits for new I/O or a timer. A Cluster keeps its per-node
 * connections to itself and is left as it is.
 */
export function coalesceWrites(redis: RedisClient): void {
  if (!(redis instanceof Redis)) return;
  const patched = new WeakSet<object>();
  const patch = () => {
    const stream = redis.stream as NetStream | undefined;
    if (!stream || patched.has(stream)) return;
    patched.add(stream);
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = (...args: unknown[]) => {
      if (!corked) {
        corked = true;
        stream.cork();
        setImmediate(uncork);
      }
      return write(...args);
    };
  };
  redis.on('connect', patch); // a new socket on every (re)connection
  patch();
}

type NetStream = Redis['stream'];

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
