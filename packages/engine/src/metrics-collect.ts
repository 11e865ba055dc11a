// What every metric that reads Redis shares, in a module of its own so that any module may register such a
// metric without importing the process's metrics (metrics.ts).
import { Gauge, type Counter } from 'prom-client';

export const METRICS_PREFIX = 'mcpt_';

/**
 * Runs a metric's Redis read for a scrape (a gauge, or a counter kept in Redis). When Redis is not connected
 * (`redisReady`), fails, or does not answer within `timeoutMs` (commands wait while it reconnects), the metric is
 * emptied instead of failing or hanging the scrape: the process's own counters stay visible during a Redis outage.
 * Use it in every collect() that reads Redis.
 */
export async function collectFromRedis<L extends string>(
  metric: Gauge<L> | Counter<L>,
  read: () => Promise<void>,
  options: { redisReady?: () => boolean; timeoutMs?: number; unlabelled?: boolean } = {},
): Promise<void> {
  // A gauge without labels would read 0 once reset: NaN says "unknown" instead of "none". A counter is left out.
  const unknown = () => (options.unlabelled && metric instanceof Gauge ? metric.set(Number.NaN) : metric.reset());
  if (options.redisReady && !options.redisReady()) {
    unknown();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.timeoutMs ?? 2000);
  });
  try {
    if ((await Promise.race([read().then(() => 'done' as const), timeout])) === 'timeout') unknown();
  } catch {
    unknown();
  } finally {
    clearTimeout(timer);
  }
}
