// Endpoints for the people and machines that run the api: liveness, readiness (Redis reachable), Prometheus
// metrics (behind METRICS_TOKEN, or open on a loopback bind only), and the admin dashboard when ADMIN_TOKEN is set. Refused /mcp requests
// are counted where /mcp is served (transport/router.ts).
import express, { type Router } from 'express';
import {
  metricsAccess,
  type CleanupStack,
  type Engine,
  type Logger,
  type MetricsGate,
  type RedisClient,
  type RunnerMetrics,
  type TaskAdmin,
  type ToolJobData,
} from '@mcp-tasks/engine';
import type { CatalogEntry } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { adminRouter, carriesAdminToken, operatorActions } from './admin.ts';
import type { ApiConfig } from './config.ts';
import { loopbackHostGuard } from './http-guards.ts';

/** The routes for probes and scrapers: on a loopback bind they answer only a loopback Host (DNS rebinding). */
const OPS_PATHS = ['/healthz', '/readyz', '/metrics'];

/** How often an api with the dashboard samples the queue depth for its chart. */
const QUEUE_DEPTH_SAMPLE_MS = 15_000;
/** A readiness probe answers within this long even when Redis hangs (commands queue while it reconnects). */
const READY_TIMEOUT_MS = 1000;

export interface OperationsDeps {
  config: ApiConfig;
  redis: RedisClient;
  admin: TaskAdmin;
  queue: Queue<ToolJobData>;
  metrics: RunnerMetrics;
  engine: Engine;
  /** The audit logger: operators' actions on the dashboard are audited. */
  audit: Logger;
  log: Logger;
  /** Where the dashboard registers its queue-depth sampler. */
  cleanup: CleanupStack;
  /** The live tool catalog from the replica's cache (scheduling gauges, without reading it per scrape). */
  catalog?: () => Iterable<CatalogEntry>;
  /** How many live tools this replica's catalog leaves out (refused, quarantined: docs/catalog.md), for /readyz. */
  catalogRefused?: () => number;
}

export async function operationsRouter(deps: OperationsDeps): Promise<Router> {
  const { config, redis, admin, queue, metrics, catalog } = deps;
  // Case-sensitive and strict, as a balancer's rules are: /METRICS or /metrics/ is not /metrics here either, so a
  // proxy that hides /metrics (deploy/nginx.conf) cannot be walked around by spelling it otherwise.
  const router = express.Router({ caseSensitive: true, strict: true });
  router.use(OPS_PATHS, loopbackHostGuard(config.HOST));
  metrics.addClusterGauges(admin, queue, {
    redisReady: () => redis.status === 'ready',
    liveScanLimit: config.METRICS_LIVE_SCAN_LIMIT,
    liveRefreshMs: config.METRICS_LIVE_REFRESH_MS,
    ...(catalog ? { catalog } : {}),
  });
  // Liveness answers while the process runs; readiness also needs Redis.
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', (req, res) => {
    // Probes and anyone who reaches the port read states; why (an upstream's failure, which may quote it) is for
    // operators: with ADMIN_TOKEN, as the dashboard shows it (docs/security.md, "Health and readiness").
    const reasons = carriesAdminToken(req.headers.authorization, config.ADMIN_TOKEN);
    redisReady(redis).then(
      // The gateway's upstreams and the catalog's refusals are detail: the api serves whatever state they are in
      // (docs/gateway.md, docs/catalog.md).
      () =>
        upstreamDetail(deps.engine, reasons).then((upstreams) =>
          res.json({ status: 'ready', ...catalogDetail(deps), ...upstreams }),
        ),
      (error: Error) => res.status(503).json({ status: 'unavailable', reason: `redis: ${error.message}` }),
    );
  });
  const gate = metricsGate(config);
  router.get('/metrics', (req, res, next) => {
    const access = metricsAccess(req.headers.authorization, gate);
    if (!access.allowed) {
      res.status(access.status).set(access.headers).type('text/plain').send(access.text);
      return;
    }
    metrics.text().then((text) => {
      res.set('Content-Type', metrics.contentType).send(text);
    }, next);
  });
  if (config.ADMIN_TOKEN) {
    const { engine } = deps;
    // The queue-depth chart needs samples whether or not a dashboard is open.
    const sampleDepth = () =>
      config.DASHBOARD_FIGURES
        ? admin.queueJobs().then(
            (jobs) => engine.activity.depth(jobs),
            () => undefined,
          )
        : Promise.resolve();
    if (config.DASHBOARD_FIGURES) {
      const sampler = setInterval(() => void sampleDepth(), QUEUE_DEPTH_SAMPLE_MS);
      sampler.unref();
      deps.cleanup.add('queue-depth-sampler', sampler, clearInterval);
    }
    router.use(
      await adminRouter({
        token: config.ADMIN_TOKEN,
        admin,
        queue,
        bindHost: config.HOST,
        allowedOrigins: config.ALLOWED_ORIGINS,
        activity: engine.activity,
        sampleDepth,
        audit: deps.audit,
        actions: operatorActions(engine),
      }),
    );
  }
  return router;
}

/** Who may read the api's /metrics: METRICS_TOKEN, or anyone on a loopback HOST (docs/security.md, "Metrics"). */
export function metricsGate(config: ApiConfig): MetricsGate {
  return { token: config.METRICS_TOKEN, bindHost: config.HOST, bindVariable: 'HOST' };
}

async function redisReady(redis: RedisClient): Promise<void> {
  if (redis.status !== 'ready') throw new Error(`connection is ${redis.status}`);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to PING within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([redis.ping(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How many live tools the replica lists and leaves out (refused or quarantined: docs/catalog.md), for /readyz; nothing
 * while it leaves none out.
 */
function catalogDetail(deps: OperationsDeps): { catalog?: { tools: number; refused: number } } {
  const refused = deps.catalogRefused?.() ?? 0;
  if (!deps.catalog || refused === 0) return {};
  return { catalog: { tools: [...deps.catalog()].length, refused } };
}

/**
 * Each worker's upstream MCP servers, for /readyz: their states, and with `reasons` why (nothing when there are none,
 * or on error).
 */
async function upstreamDetail(engine: Engine, reasons: boolean): Promise<{ upstreams?: Record<string, unknown>[] }> {
  const upstreams = await engine.gateway.upstreams().catch(() => []);
  if (upstreams.length === 0) return {};
  return {
    upstreams: upstreams.map(({ upstream, worker, state, reason, since, tools, refused }) => ({
      upstream,
      worker,
      state,
      ...(reasons && reason !== undefined ? { reason } : {}),
      since: new Date(since).toISOString(),
      tools,
      ...(refused !== undefined ? { refused } : {}),
    })),
  };
}
