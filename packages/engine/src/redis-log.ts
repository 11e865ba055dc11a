// What a process says while Redis is away. ioredis emits an 'error' on every connection for every failed reconnect
// (several a second, per connection), and BullMQ's objects repeat them: logged as they come, an outage buried the
// logs under identical warnings and stacks. One warning when the connection is lost, naming the target; then at most
// one line per REDIS_DOWN_LOG_INTERVAL_MS with the count of failures since; one info line when it is back.
import type { Logger } from '@mcp-tasks/runtime';
import type { RedisClient } from './redis.ts';

/** System error codes of a Redis that cannot be reached: expected during an outage, so logged without a stack. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

export interface RedisConnectionLogOptions {
  /** Where the process connects, as `describeRedisTarget` words it (no password). */
  target: string;
  /** REDIS_DOWN_LOG_INTERVAL_MS: the least time between two "still unreachable" lines. */
  intervalMs: number;
}

/** Whether `error` says Redis cannot be reached (as opposed to a fault worth its stack). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  // ioredis' and BullMQ's own words for a connection that went away.
  return /Connection is closed|connect ETIMEDOUT|Socket closed unexpectedly/i.test(error.message);
}

/** The connection state of a process's Redis connections, taken together: one outage, one story in the logs. */
export class RedisConnectionLog {
  #downSince: number | undefined;
  #lastLine = 0;
  #failures = 0;

  constructor(
    private readonly log: Logger,
    private readonly options: RedisConnectionLogOptions,
  ) {}

  /** Follows `connection`: its errors go through `error`, its readiness ends an outage. */
  watch(connection: RedisClient): void {
    connection.on('error', (error: Error) => this.error(error));
    connection.on('ready', () => this.ready());
  }

  /** An error of a Redis connection or of a BullMQ object over one: throttled when it is an outage's. */
  error(error: Error): void {
    if (!isConnectionError(error)) {
      this.log.warn('redis error', { target: this.options.target, error: error.message, stack: error.stack });
      return;
    }
    const now = Date.now();
    if (this.#downSince === undefined) {
      this.#downSince = now;
      this.#lastLine = now;
      this.#failures = 0;
      this.log.warn('redis connection lost: retrying', { target: this.options.target, error: error.message });
      return;
    }
    this.#failures += 1;
    if (now - this.#lastLine < this.options.intervalMs) return;
    this.log.warn('redis still unreachable', {
      target: this.options.target,
      error: error.message,
      failures: this.#failures,
      downForMs: now - this.#downSince,
    });
    this.#lastLine = now;
    this.#failures = 0;
  }

  ready(): void {
    if (this.#downSince === undefined) return;
    this.log.info('redis connection back', { target: this.options.target, downForMs: Date.now() - this.#downSince });
    this.#downSince = undefined;
  }
}
