// Environment parsing shared by every process: one zod schema per app, parsed once into a frozen object, with
// errors that name the variable and what it accepts.
import { DEFAULT_CATALOG_BOUNDS, type CatalogBounds } from '@mcp-tasks/protocol';
import { DEFAULT_SCHEMA_BUDGET, type SchemaBudgetSettings } from './schema-budget.ts';
import { z } from 'zod';
import { isSecretVariable, maskUrlPasswords } from './redact.ts';
import { parseClusterNodes, prefixPinsOneSlot } from './redis-target.ts';

/** How often, at most, a process sends its pending dashboard figures (DASHBOARD_FLUSH_MS, this by default). */
export const ACTIVITY_FLUSH_MS = 1000;

/** The key prefix when none is set; in Redis Cluster mode the same name as a hash tag. */
export const DEFAULT_REDIS_PREFIX = 'mcpt';
export const DEFAULT_CLUSTER_REDIS_PREFIX = `{${DEFAULT_REDIS_PREFIX}}`;

export const RedisEnvSchema = z.object({
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /** Seed nodes of a Redis Cluster; when set, REDIS_URL must not be (see applyClusterRules). */
  REDIS_CLUSTER_NODES: z
    .string()
    .superRefine((value, ctx) => {
      try {
        parseClusterNodes(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    })
    .optional(),
  REDIS_PREFIX: z
    .string()
    .regex(
      /^(\{[A-Za-z0-9_-]+\}|[A-Za-z0-9_-]+)$/,
      'letters, digits, _ and -, optionally in {braces} for Redis Cluster',
    )
    .default(DEFAULT_REDIS_PREFIX),
});

export type RedisEnv = z.infer<typeof RedisEnvSchema>;

export const LogEnvSchema = z.object({
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /** While Redis is unreachable: the least time between two "redis still unreachable" lines (redis-log.ts). */
  REDIS_DOWN_LOG_INTERVAL_MS: intFromEnv(30_000, { min: 100 }),
});

/** A whole number from the environment, e.g. `intFromEnv(1000, { min: 1 })`. */
export function intFromEnv(defaultValue: number, bounds: { min?: number; max?: number } = {}) {
  return z.coerce
    .number()
    .int()
    .min(bounds.min ?? 0)
    .max(bounds.max ?? Number.MAX_SAFE_INTEGER)
    .default(defaultValue);
}

/** Shared by every process: api, workers and the CLI write a session's event stream and must agree on its lifetime. */
export const SessionEnvSchema = z.object({
  SESSION_IDLE_TTL_MS: intFromEnv(3_600_000, { min: 1000 }),
});

export type SessionEnv = z.infer<typeof SessionEnvSchema>;

/**
 * The tool catalog (docs/catalog.md), read by workers (which publish) and api replicas (which list): both must agree
 * on how long a tool stays listed after the last heartbeat of a worker serving it.
 */
export const CatalogEnvSchema = z.object({
  CATALOG_HEARTBEAT_MS: intFromEnv(5000, { min: 100 }),
  CATALOG_GRACE_MS: intFromEnv(60_000, { min: 1000 }),
  /** An api replica re-reads the catalog this often even when no change was announced. */
  CATALOG_RELOAD_MS: intFromEnv(2000, { min: 50 }),
  /**
   * While the catalog has no live tool at all (a system starting: the api was ready before any worker published), a
   * call of a tool it does not know waits this long for a worker to publish it before answering Unknown tool.
   */
  CATALOG_EMPTY_WAIT_MS: intFromEnv(10_000, { min: 0, max: 120_000 }),
  /**
   * Bounds of what a process admits from the catalog, whoever published it (docs/catalog.md, "Bounds"): an entry's
   * size in bytes of JSON, its nesting depth, and how many live tools are read.
   */
  CATALOG_MAX_ENTRY_BYTES: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxEntryBytes, { min: 1024, max: 16 * 1024 * 1024 }),
  /** ajv recurses on a schema's nesting; this cap keeps it far from the stack's limit. */
  CATALOG_MAX_DEPTH: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxDepth, { min: 8, max: 256 }),
  CATALOG_MAX_TOOLS: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxTools, { min: 1, max: 100_000 }),
  /** A publisher over its share loses its own excess, never another publisher's tools (docs/catalog.md, "Bounds"). */
  CATALOG_MAX_TOOLS_PER_PUBLISHER: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxToolsPerPublisher, { min: 1, max: 100_000 }),
  /**
   * Budgets of the cost model, checked before a schema is compiled (docs/catalog.md, "Budgets"): the subschemas that
   * apply to one value of the arguments (paths through $ref, anyOf, oneOf ...), and the RE2 program size of the
   * entry's patterns.
   */
  CATALOG_MAX_SCHEMA_PATHS: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxSchemaPaths, { min: 1, max: 1_000_000_000 }),
  CATALOG_MAX_PATTERN_SIZE: intFromEnv(DEFAULT_CATALOG_BOUNDS.maxPatternSize, { min: 0, max: 10_000_000 }),
  /**
   * Budgets of the schema threads, where a schema the cost model does not rate cheap is compiled and validated
   * (docs/catalog.md, "Budgets"): a thread over its deadline or its heap is terminated and replaced.
   */
  SCHEMA_COMPILE_TIMEOUT_MS: intFromEnv(DEFAULT_SCHEMA_BUDGET.compileTimeoutMs, { min: 50, max: 600_000 }),
  SCHEMA_VALIDATION_TIMEOUT_MS: intFromEnv(DEFAULT_SCHEMA_BUDGET.validationTimeoutMs, { min: 10, max: 600_000 }),
  SCHEMA_THREAD_HEAP_MB: intFromEnv(DEFAULT_SCHEMA_BUDGET.threadHeapMb, { min: 16, max: 16_384 }),
  SCHEMA_THREADS: intFromEnv(DEFAULT_SCHEMA_BUDGET.threads, { min: 1, max: 64 }),
  /** What runs on the event loop: a schema this small (its JSON plus its RE2 instructions) and a call this cheap. */
  SCHEMA_INLINE_MAX_BYTES: intFromEnv(DEFAULT_SCHEMA_BUDGET.inlineMaxBytes, { min: 0, max: 16 * 1024 * 1024 }),
  SCHEMA_INLINE_TOTAL_BYTES: intFromEnv(DEFAULT_SCHEMA_BUDGET.inlineTotalBytes, { min: 0, max: 1024 * 1024 * 1024 }),
  SCHEMA_INLINE_MAX_STEPS: intFromEnv(DEFAULT_SCHEMA_BUDGET.inlineMaxSteps, { min: 0, max: 1_000_000_000 }),
});

/** The catalog bounds of a configuration (the defaults for what it does not set). */
export function catalogBoundsOf(config: Partial<CatalogEnv>): CatalogBounds {
  return {
    maxEntryBytes: config.CATALOG_MAX_ENTRY_BYTES ?? DEFAULT_CATALOG_BOUNDS.maxEntryBytes,
    maxDepth: config.CATALOG_MAX_DEPTH ?? DEFAULT_CATALOG_BOUNDS.maxDepth,
    maxTools: config.CATALOG_MAX_TOOLS ?? DEFAULT_CATALOG_BOUNDS.maxTools,
    maxToolsPerPublisher: config.CATALOG_MAX_TOOLS_PER_PUBLISHER ?? DEFAULT_CATALOG_BOUNDS.maxToolsPerPublisher,
    maxSchemaPaths: config.CATALOG_MAX_SCHEMA_PATHS ?? DEFAULT_CATALOG_BOUNDS.maxSchemaPaths,
    maxPatternSize: config.CATALOG_MAX_PATTERN_SIZE ?? DEFAULT_CATALOG_BOUNDS.maxPatternSize,
  };
}

/** The schema threads' budgets and what runs on the event loop, of a configuration (docs/catalog.md, "Budgets"). */
export function schemaBudgetOf(config: Partial<CatalogEnv>): SchemaBudgetSettings {
  return {
    compileTimeoutMs: config.SCHEMA_COMPILE_TIMEOUT_MS ?? DEFAULT_SCHEMA_BUDGET.compileTimeoutMs,
    validationTimeoutMs: config.SCHEMA_VALIDATION_TIMEOUT_MS ?? DEFAULT_SCHEMA_BUDGET.validationTimeoutMs,
    threadHeapMb: config.SCHEMA_THREAD_HEAP_MB ?? DEFAULT_SCHEMA_BUDGET.threadHeapMb,
    threads: config.SCHEMA_THREADS ?? DEFAULT_SCHEMA_BUDGET.threads,
    inlineMaxBytes: config.SCHEMA_INLINE_MAX_BYTES ?? DEFAULT_SCHEMA_BUDGET.inlineMaxBytes,
    inlineTotalBytes: config.SCHEMA_INLINE_TOTAL_BYTES ?? DEFAULT_SCHEMA_BUDGET.inlineTotalBytes,
    inlineMaxSteps: config.SCHEMA_INLINE_MAX_STEPS ?? DEFAULT_SCHEMA_BUDGET.inlineMaxSteps,
  };
}

export type CatalogEnv = z.infer<typeof CatalogEnvSchema>;

/** The shortest ttl a task is granted, whatever it asked for. */
export const MIN_TASK_TTL_MS = 1000;

/** How long tasks live and how their waiters poll: the api's, whose tools/call creates tasks (docs/configuration.md). */
export const TaskEnvSchema = z.object({
  TASK_TTL_DEFAULT_MS: intFromEnv(3_600_000, { min: MIN_TASK_TTL_MS }),
  TASK_TTL_MAX_MS: intFromEnv(24 * 3_600_000, { min: MIN_TASK_TTL_MS }),
  TASK_POLL_INTERVAL_MS: intFromEnv(1000, { min: 100 }),
  RESULT_RECHECK_MS: intFromEnv(5000, { min: 50 }),
  /**
   * The most child tasks (ctx.callTool) one task may start. The api writes its value on every task it creates, and a
   * child inherits its parent's, so a worker's own setting applies only to tasks that carry none (an operator's retry,
   * a task from before the setting).
   */
  MAX_CHILDREN_PER_TASK: intFromEnv(1000, { min: 0, max: 1_000_000 }),
});

export type TaskEnv = z.infer<typeof TaskEnvSchema>;

/**
 * A principal's task operations per window, shared by every api replica and worker through Redis (T-SEC-3): the
 * api's requests, and the child tasks a worker's tools start on the principal's behalf (ctx.callTool).
 */
export const PrincipalRateEnvSchema = z.object({
  RATE_LIMIT_WINDOW_MS: intFromEnv(10_000, { min: 100 }),
  RATE_LIMIT_PER_PRINCIPAL: intFromEnv(2000),
});

export type PrincipalRateEnv = z.infer<typeof PrincipalRateEnvSchema>;

/** Shared by api and workers: who may read /metrics. */
export const MetricsEnvSchema = z.object({
  /** When set, /metrics answers only requests with `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise). */
  METRICS_TOKEN: z.string().min(16, 'use at least 16 characters (e.g. openssl rand -hex 24)').optional(),
  /** Record the dashboard's per-minute figures (activity.ts): counted in memory, sent by one pipeline per flush. */
  DASHBOARD_FIGURES: z
    .enum(['true', 'false', '1', '0'], { message: "use 'true' or 'false'" })
    .default('true')
    .transform((value) => value === 'true' || value === '1'),
  /** How often, at most, a process sends its pending dashboard figures (ms); also when a minute ends, and at stop. */
  DASHBOARD_FLUSH_MS: intFromEnv(ACTIVITY_FLUSH_MS, { min: 50, max: 60_000 }),
});

export type MetricsEnv = z.infer<typeof MetricsEnvSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): Readonly<z.infer<S>> {
  // Empty variables count as unset, as in most shells' `FOO= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = schema.safeParse(present);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) => ({ name: String(issue.path[0] ?? ''), message: issue.message }));
  const data = parsed.success ? applyClusterRules(parsed.data, present, problems) : undefined;
  if (problems.length === 0) return Object.freeze(data as z.infer<S>);
  const lines = problems.map(
    ({ name, message }) => `  ${shownValue(name, present[name])}: ${redactIn(message, name, present[name])}`,
  );
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}

function shownValue(name: string, value: string | undefined): string {
  if (value === undefined) return `${name} (unset)`;
  if (isSecretVariable(name)) return `${name} (value hidden, ${value.length} characters)`;
  return `${name}=${JSON.stringify(maskUrlPasswords(value))}`;
}

/** A validation message that quotes the rejected value (a custom check may) gets it hidden as well. */
function redactIn(message: string, name: string, value: string | undefined): string {
  const masked = maskUrlPasswords(message);
  return isSecretVariable(name) && value && value.length >= 4 ? masked.split(value).join('***') : masked;
}

/**
 * Redis Cluster mode (REDIS_CLUSTER_NODES set) has rules across variables, checked for every schema built on
 * RedisEnvSchema: our Lua scripts and BullMQ's touch several keys at once, which a cluster allows only within one
 * slot, so the prefix must carry a hash tag (`{mcpt}` when none is set); and REDIS_URL must not name a second Redis.
 */
function applyClusterRules(
  data: unknown,
  present: Record<string, string | undefined>,
  problems: { name: string; message: string }[],
): unknown {
  if (typeof data !== 'object' || data === null) return data;
  const env = data as Partial<RedisEnv>;
  if (env.REDIS_CLUSTER_NODES === undefined) return data;
  if (present['REDIS_URL'] !== undefined) {
    problems.push({
      name: 'REDIS_URL',
      message: 'set either REDIS_URL (one Redis server) or REDIS_CLUSTER_NODES (a Redis Cluster), not both',
    });
  }
  if (present['REDIS_PREFIX'] === undefined) return { ...data, REDIS_PREFIX: DEFAULT_CLUSTER_REDIS_PREFIX };
  if (env.REDIS_PREFIX !== undefined && !prefixPinsOneSlot(env.REDIS_PREFIX)) {
    problems.push({
      name: 'REDIS_PREFIX',
      message:
        'in Redis Cluster mode the prefix needs a hash tag so that every key of the runner and of BullMQ lands in ' +
        `one slot: write it in braces, e.g. REDIS_PREFIX={${env.REDIS_PREFIX}}`,
    });
  }
  return data;
}
