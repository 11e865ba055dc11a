// The worker's configuration, read once from the environment (documented in docs/configuration.md).
import {
  CallbackEnvSchema,
  CatalogEnvSchema,
  intFromEnv,
  LogEnvSchema,
  MetricsEnvSchema,
  parseEnv,
  PrincipalRateEnvSchema,
  RedisEnvSchema,
  SchedulingEnvSchema,
  SessionEnvSchema,
  SignalEnvSchema,
  TaskEnvSchema,
  WebhookEnvSchema,
} from '@mcp-tasks/engine';
import { z } from 'zod';

export const WorkerEnvSchema = RedisEnvSchema.extend(LogEnvSchema.shape)
  .extend(SessionEnvSchema.shape)
  .extend(CallbackEnvSchema.shape)
  .extend(MetricsEnvSchema.shape)
  .extend(CatalogEnvSchema.shape)
  .extend(SchedulingEnvSchema.shape)
  // The timing of the child tasks its tools start (ctx.callTool), as the api's for the tasks it creates.
  .extend(TaskEnvSchema.shape)
  // Signs and delivers tasks' webhooks (docs/webhooks.md): the same settings as the api's.
  .extend(WebhookEnvSchema.shape)
  // The bounds of the events its tools send (ctx.signalTask), as the api's for those sent to its endpoint.
  .extend(SignalEnvSchema.shape)
  // Child tasks are charged to their principal's rate bucket, as the api charges its requests (same settings).
  .extend(PrincipalRateEnvSchema.shape)
  .extend({
    WORKER_CONCURRENCY: intFromEnv(16, { min: 1, max: 10_000 }),
    WORKER_SHUTDOWN_GRACE_MS: intFromEnv(10_000),
    WORKER_LOCK_DURATION_MS: intFromEnv(30_000, { min: 1000 }),
    WORKER_STALLED_INTERVAL_MS: intFromEnv(30_000, { min: 1000 }),
    WORKER_MAX_STALLED_COUNT: intFromEnv(2, { min: 0, max: 100 }),
    /**
     * How often the workers of a queue look for jobs whose worker is gone (no Redis connection left), which go to
     * another worker after a second look half an interval later (docs/reliability.md, "A worker dies"); 0: never.
     */
    WORKER_LIVENESS_CHECK_MS: intFromEnv(5000, { min: 0, max: 600_000 }),
    CANCEL_CHECK_INTERVAL_MS: intFromEnv(2000, { min: 50 }),
    RUNNING_NOTE_AFTER_MS: intFromEnv(200, { min: 0, max: 60_000 }),
    MAINTENANCE_INTERVAL_MS: intFromEnv(5000, { min: 50 }),
    RECONCILE_AFTER_MS: intFromEnv(60_000, { min: 100 }),
    INPUT_REQUEST_TIMEOUT_MS: intFromEnv(30 * 60_000, { min: 1000 }),
    INPUT_RECHECK_MS: intFromEnv(5000, { min: 50 }),
    WORKER_INPUT_WAIT_SLOTS: intFromEnv(1000, { max: 100_000 }),
    /** Serve /metrics and /healthz on this port (0 picks a free one); unset: no HTTP listener. */
    WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    WORKER_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    /** External tools that are polled: the first poll after this long, then waits growing up to the maximum. */
    EXTERNAL_POLL_MIN_MS: intFromEnv(1000, { min: 50 }),
    EXTERNAL_POLL_MAX_MS: intFromEnv(30_000, { min: 50 }),
    /** The most bytes of JSON one checkpoint or step result may take (docs/durable-execution.md). */
    DURABLE_MAX_BYTES: intFromEnv(64 * 1024, { min: 1024, max: 16 * 1024 * 1024 }),
    /** The most checkpoint, step results and child tasks one task may keep (docs/durable-execution.md). */
    DURABLE_MAX_STEPS: intFromEnv(10_000, { min: 1, max: 1_000_000 }),
    /**
     * The most sleeps and waits one task may make in its life (docs/durable-execution.md, "Waits"): each wake runs the
     * tool again from the top, replaying what it stored.
     */
    DURABLE_MAX_WAITS: intFromEnv(1000, { min: 1, max: 1_000_000 }),
    /** The most bytes one task's checkpoint and step results may take together (docs/durable-execution.md). */
    DURABLE_MAX_TOTAL_BYTES: intFromEnv(4 * 1024 * 1024, { min: 1024, max: 1024 * 1024 * 1024 }),
    /** Serve the demo tools (`crash` included): only when asked, never by default (`mcpt worker --demo` sets it). */
    MCPT_DEMO: z
      .enum(['true', 'false', '1', '0'], { message: "use '1' or '0'" })
      .default('0')
      .transform((value) => value === 'true' || value === '1'),
    /** The most unfinished tasks one principal may have: child tasks count, as the api's tasks do (same value). */
    MAX_TASKS_PER_OWNER: intFromEnv(1000, { min: 1 }),
  });

export type WorkerConfig = Readonly<z.infer<typeof WorkerEnvSchema>>;

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return parseEnv(WorkerEnvSchema, env);
}
