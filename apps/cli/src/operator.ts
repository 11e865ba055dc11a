// What every command works with: one Redis connection and the engine objects built on it, opened only when a
// command needs Redis (--help does not) and closed in reverse order, also when the command fails.
import {
  closeRedis,
  createEngine,
  createRedis,
  describeRedisTarget,
  type RedisClient,
  type TaskAdmin,
  type TaskService,
  type TaskSignals,
  type TaskStore,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { CleanupStack } from '@mcp-tasks/runtime';
import type { CatalogEntry, TaskRecord } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { loadCliConfig, type CliConfig } from './config.ts';
import type { CliIo } from './io.ts';
import { chooseRedis } from './start-state.ts';

const CONNECT_TIMEOUT_MS = 5000;

export interface Operator {
  config: CliConfig;
  redis: RedisClient;
  store: TaskStore;
  queue: Queue<ToolJobData>;
  admin: TaskAdmin;
  /** Events for tasks (mcpt signal; docs/durable-execution.md, "Waits"). */
  signals: TaskSignals;
  /** The TaskService for cancels and retries; a retry keeps the original task's ttl and pollInterval. */
  service: (original?: TaskRecord) => TaskService;
  /** A tool's catalog entry: whether it may run again after a worker crash, its scheduling (an unknown tool is refused). */
  tool: (name: string) => CatalogEntry;
}

/** A failure to report to the operator: message on stderr, exit code 1 (usage errors are 2). */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * Runs `use` against the Redis `chooseRedis` picks (start-state.ts), having said on stderr which one it is: stdout
 * stays the command's own (--json).
 */
export async function withOperator<T>(
  io: Pick<CliIo, 'env' | 'err'>,
  use: (operator: Operator) => Promise<T>,
): Promise<T> {
  const chosen = chooseRedis(io.env);
  io.err(`${chosen.line}\n`);
  const config = loadCliConfig(chosen.env);
  const cleanup = new CleanupStack();
  try {
    const redis = cleanup.add('redis', createRedis(config, 'mcpt-cli'), closeRedis);
    await reachable(redis, config);
    // The CLI never waits for a task: its engine's subscriber shares the one connection and never subscribes.
    const engine = cleanup.add('engine', createEngine({ redis }, config), (e) => e.close());
    // A retry queues the job as the api would: the tool's definition comes from the live catalog.
    const catalog = await engine.catalog.read();
    const operator: Operator = {
      config,
      redis,
      store: engine.store,
      queue: engine.queue,
      admin: engine.admin,
      signals: engine.signals,
      // A retried task keeps its ttl, whatever the api's TASK_TTL_MAX_MS, and its pollInterval.
      service: (original) =>
        original
          ? engine.tasksWith({ maxTtlMs: Number.MAX_SAFE_INTEGER, pollIntervalMs: original.pollInterval })
          : engine.tasks,
      tool: (tool) => {
        const entry = catalog.get(tool);
        if (!entry) {
          throw new CliError(
            `Tool '${tool}' is not in the tool catalog (no worker serves it now); it cannot be retried`,
          );
        }
        return entry;
      },
    };
    return await use(operator);
  } finally {
    await cleanup.releaseAll();
  }
}

/** Resolves once Redis answers PING; fails at the first connection error (an operator wants to know now). */
async function reachable(redis: RedisClient, config: CliConfig): Promise<void> {
  const target = describeRedisTarget(config.REDIS_URL, config.REDIS_CLUSTER_NODES);
  const hint = 'set REDIS_URL (or REDIS_CLUSTER_NODES) and REDIS_PREFIX as for the api and the workers';
  let timer: NodeJS.Timeout | undefined;
  let onError: ((error: Error) => void) | undefined;
  const failed = new Promise<never>((_, reject) => {
    onError = (error) =>
      reject(new CliError(`Cannot reach Redis at ${target}: ${error.message || String(error)}; ${hint}`));
    redis.once('error', onError);
    timer = setTimeout(
      () => reject(new CliError(`Redis at ${target} did not answer within ${CONNECT_TIMEOUT_MS / 1000} s; ${hint}`)),
      CONNECT_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([redis.ping(), failed]);
  } finally {
    clearTimeout(timer);
    if (onError) redis.off('error', onError);
    // Later errors (a reconnect while a command runs) must not crash the process as unhandled 'error' events.
    redis.on('error', () => undefined);
  }
}
