/**
 * @mcp-tasks/engine — the runner's Redis side: key layout, Lua scripts, task records, sessions, the tool queue,
 * the pub/sub plumbing and the task operations shared by api and worker.
 *
 * @example
 * const redis = createRedis('redis://127.0.0.1:6379', 'api');
 * const engine = createEngine({ redis }, { REDIS_PREFIX: 'mcpt', SESSION_IDLE_TTL_MS: 3_600_000 });
 * const record = await engine.store.get(taskId);
 */
export * from './audit.ts';
export * from './callback-token.ts';
export * from './cleanup.ts';
export * from './config.ts';
export * from './stop-task-work.ts';
export * from './engine.ts';
export * from './session-events.ts';
export * from './external.ts';
export * from './external-queues.ts';
export * from './input-broker.ts';
export * from './keys.ts';
export * from './list-cursor.ts';
export * from './logger.ts';
export * from './metrics.ts';
export * from './queue.ts';
export * from './rate-limiter.ts';
export * from './redis.ts';
export * from './redact.ts';
export * from './redis-target.ts';
export * from './sessions.ts';
export * from './connection-slots.ts';
export * from './subscriber.ts';
export * from './task-admin.ts';
export * from './task-service.ts';
export { TaskKeys } from './records/keys.ts';
export * from './records/store.ts';
export * from './maintenance.ts';
