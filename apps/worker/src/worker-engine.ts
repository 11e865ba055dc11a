// The worker's three Redis connections and the engine over them, each registered on the cleanup stack as it is
// opened, so that a start that fails half way closes what it opened. Each connection is named after the worker's
// instance: while one is open, other workers know the process is alive (lost-jobs.ts in the engine).
import {
  closeRedis,
  coalesceWrites,
  createEngine,
  createRedis,
  describeRedisTarget,
  RedisConnectionLog,
  workerConnectionName,
  type Engine,
  type RedisClient,
} from '@mcp-tasks/engine';
import { type CleanupStack, type Logger } from '@mcp-tasks/runtime';
import type { WorkerConfig } from './config.ts';

export interface WorkerEngine {
  /** Commands and pipelines of the worker's own (records, transitions, caps). */
  redis: RedisClient;
  /** The BullMQ Workers' connection, which the engine's BullMQ objects share. */
  bullmq: RedisClient;
  engine: Engine;
  /** What the process says while Redis is away; BullMQ's Workers report their connection errors to it too. */
  connectionLog: RedisConnectionLog;
}

export async function openEngine(
  config: WorkerConfig,
  log: Logger,
  cleanup: CleanupStack,
  /** The worker's instance (workerInstance): its connections carry it in their names. */
  instance: string,
): Promise<WorkerEngine> {
  const named = (role: Parameters<typeof workerConnectionName>[0]) =>
    createRedis(config, workerConnectionName(role, instance));
  const redis = cleanup.add('redis', named('mcpt-worker'), closeRedis);
  const bullmq = cleanup.add('redis-worker', named('mcpt-worker-bull'), closeRedis);
  const subscriber = cleanup.add('redis-subscriber', named('mcpt-worker-sub'), closeRedis);
  const connectionLog = new RedisConnectionLog(log, {
    target: describeRedisTarget(config.REDIS_URL, config.REDIS_CLUSTER_NODES),
    intervalMs: config.REDIS_DOWN_LOG_INTERVAL_MS,
  });
  for (const connection of [redis, bullmq, subscriber]) connectionLog.watch(connection);
  // The commands of one event-loop turn leave in one socket write (redis.ts): jobs settling together send their
  // record reads, transitions and BullMQ's moves as one write per connection instead of a system call each.
  coalesceWrites(redis);
  coalesceWrites(bullmq);
  await redis.ping();
  // BullMQ objects share the BullMQ worker's connection, so that pipelines on `redis` stay cheap (see api app.ts).
  const engine = cleanup.add('engine', createEngine({ redis, queues: bullmq, subscriber }, config), (e) => e.close());
  return { redis, bullmq, engine, connectionLog };
}
