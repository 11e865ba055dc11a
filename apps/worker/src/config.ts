// The worker's configuration, read once from the environment (documented in README.md, "Configuration").
import { intFromEnv, LogEnvSchema, parseEnv, RedisEnvSchema } from '@mcp-tasks/engine';
import type { z } from 'zod';

export const WorkerEnvSchema = RedisEnvSchema.extend(LogEnvSchema.shape).extend({
  WORKER_CONCURRENCY: intFromEnv(16, { min: 1, max: 10_000 }),
  WORKER_SHUTDOWN_GRACE_MS: intFromEnv(10_000),
  WORKER_LOCK_DURATION_MS: intFromEnv(30_000, { min: 1000 }),
  WORKER_STALLED_INTERVAL_MS: intFromEnv(30_000, { min: 1000 }),
  WORKER_MAX_STALLED_COUNT: intFromEnv(2, { min: 0, max: 100 }),
  CANCEL_CHECK_INTERVAL_MS: intFromEnv(2000, { min: 50 }),
  MAINTENANCE_INTERVAL_MS: intFromEnv(5000, { min: 50 }),
  RECONCILE_AFTER_MS: intFromEnv(60_000, { min: 100 }),
});

export type WorkerConfig = Readonly<z.infer<typeof WorkerEnvSchema>>;

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return parseEnv(WorkerEnvSchema, env);
}
