/**
 * @mcp-tasks/engine — the runner's Redis side, as api, workers and the CLI use it: the composition root
 * (`createEngine`), task records, sessions and their event streams, input requests, the tool queue, maintenance,
 * security (rate limits, connection slots, audit), metrics, the runner's settings and Redis connections. The process
 * plumbing that touches no Redis (logs, tracing, environment parsing, signals, listen, redaction, /metrics access)
 * is @mcp-tasks/runtime's, which the engine builds on and does not re-export.
 * The engine is cut by concern: each folder's index.ts is its entry point, re-exported here beside what the folders
 * share (configuration, keys, Redis connections, the subscriber) and the tool queue. Everything else in this package
 * (Lua scripts and their registry, record codecs and indexes) is internal; these lists are the whole surface,
 * pinned by test/unit/public-surface.test.ts.
 *
 * @example
 * const redis = createRedis('redis://127.0.0.1:6379', 'api');
 * const engine = createEngine({ redis }, { REDIS_PREFIX: 'mcpt', SESSION_IDLE_TTL_MS: 3_600_000 });
 * const record = await engine.store.get(taskId);
 */
// By concern (docs/architecture.md, "What each package owns").
export * from './records/index.ts';
export * from './sessions/index.ts';
export * from './tasks/index.ts';
export * from './durable/index.ts';
export * from './scheduling/index.ts';
export * from './catalog/index.ts';
export * from './security/index.ts';
export * from './webhooks/index.ts';
export * from './ops/index.ts';
// What the folders share (settings, keys, Redis connections, the subscriber), and what BullMQ is closest to.
export {
  catalogBoundsOf,
  CatalogEnvSchema,
  LogEnvSchema,
  MetricsEnvSchema,
  parseEnv,
  PrincipalRateEnvSchema,
  RedisEnvSchema,
  schemaBudgetOf,
  SessionEnvSchema,
  TaskEnvSchema,
} from './config.ts';
export { createEngine, type Engine } from './engine.ts';
export { ExternalQueueListener, ExternalQueues } from './external-queues.ts';
export { GatewayState, type UpstreamStatus } from './gateway.ts';
export { KeySpace } from './keys.ts';
export { BULLMQ_JOB_LAYOUT_VERSION, ToolQueueWorker } from './bullmq/index.ts';
export { createToolQueue, TOOL_QUEUE_NAME, type ToolJobData, toolJobOptions, type UpstreamTaskRef } from './queue.ts';
export {
  connectedInstances,
  isClientCommandRefused,
  type LostJob,
  LostJobs,
  workerConnectionName,
  workerInstance,
  workerOf,
} from './lost-jobs.ts';
export {
  clusterOptions,
  type ClusterSeeds,
  describeRedisTarget,
  hashTagOf,
  parseClusterNodes,
  prefixPinsOneSlot,
} from './redis-target.ts';
export { closeRedis, coalesceWrites, createRedis, type RedisClient } from './redis.ts';
export { isConnectionError, RedisConnectionLog, type RedisConnectionLogOptions } from './redis-log.ts';
export { type RequestContextRecord } from './request-context.ts';
export { type RequestOpening, RequestRefusedError } from './request-opening.ts';
export { Subscriber, type Waiter, type WakeOn } from './subscriber.ts';
