// Builds one api process: Redis connections, services, the express app and the HTTP server, released in reverse
// order on close.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  audit,
  auditLogger,
  AuditEvent,
  auditObserver,
  CatalogView,
  logCatalogRefusals,
  CleanupStack,
  closeRedis,
  coalesceWrites,
  createEngine,
  createLogger,
  createRedis,
  describeRedisTarget,
  isLoopbackHost,
  listenOn,
  metricsWarning,
  RateLimiter,
  RedisConnectionLog,
  registerSecurityCounters,
  RunnerMetrics,
  ConnectionSlots,
  startTracing,
  tracingRequested,
  type Engine,
  type Logger,
  type RedisClient,
} from '@mcp-tasks/engine';
import { createAuthenticator, type Authenticator } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { ApiServices, SecurityServices } from './context.ts';
import { metricsGate, operationsRouter } from './ops.ts';
import { TaskHandles } from './calls/handle-policy.ts';
import { PlainCalls } from './calls/plain-calls.ts';
import { RequestStateSigner } from './modern/request-state.ts';
import { callbacksRouter } from './callbacks.ts';
import { signalsRouter } from './signals.ts';
import { ApiTools } from './tool-catalog.ts';
import { mcpEndpoint } from './transport/router.ts';

export interface RunningApi {
  url: string;
  log: Logger;
  /** Re-reads AUTH_API_KEYS_FILE (SIGHUP) and logs the outcome; a bad file leaves the keys as they were. */
  reloadKeys(): void;
  close(): Promise<void>;
}

/**
 * Starts one api process: its Redis connections and engine, the services the wires share, the express app and the
 * HTTP server. Each resource is registered on the cleanup stack as it is acquired and released in reverse order, on
 * close and when start-up fails half way.
 */
export async function startApi(config: ApiConfig): Promise<RunningApi> {
  const auth = createAuthenticator(config);
  // Without authentication a session id is the only credential of its tasks: logs show its digest instead.
  const log = createLogger({
    service: 'api',
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
    hashSessionIds: !auth.enabled,
  });
  const cleanup = new CleanupStack();
  try {
    // First in, last out: the spans of the last requests are exported after everything else has closed.
    const tracing = await startTracing('mcp-task-runner-api');
    if (tracing) cleanup.add('tracing', tracing, (t) => t.shutdown());
    const { redis, engine } = openEngine(config, log, cleanup);
    const stopping = new AbortController();
    const services = await apiServices(config, log, auth, redis, engine, cleanup, stopping.signal);
    await redis.ping();
    const app = await expressApp(config, services, redis, engine, cleanup);
    const mcp = mcpEndpoint(services);
    app.use(mcp.router);
    // POST /mcp, every JSON-RPC message, is served first: it needs none of the routers above.
    const server: Server = createServer(mcp.serverOptions(app), mcp.listener(app));
    await listenOn(server, { port: config.PORT, host: config.HOST, portVariable: 'PORT', hostVariable: 'HOST' });
    cleanup.add('http-server', server, (open) => {
      stopping.abort();
      return closeServer(open);
    });
    const url = urlOf(server, config.HOST);
    log.info(`listening on ${url}`, { url, tools: services.tools.names(), tracing: tracingRequested() });
    return {
      url,
      log,
      reloadKeys: () => reloadKeys(config, services),
      close: () =>
        cleanup.releaseAll((name, error) => log.error('shutdown step failed', { step: name, error: String(error) })),
    };
  } catch (error) {
    await cleanup.releaseAll();
    throw error;
  }
}

/** The api's three Redis connections and the engine built on them. */
function openEngine(config: ApiConfig, log: Logger, cleanup: CleanupStack): { redis: RedisClient; engine: Engine } {
  const redis = cleanup.add('redis', createRedis(config, 'mcpt-api'), closeRedis);
  const subscriberRedis = cleanup.add('redis-subscriber', createRedis(config, 'mcpt-api-sub'), closeRedis);
  // BullMQ's queues get a connection of their own: ioredis copies every script defined on a connection (BullMQ
  // defines 60-odd) into each pipeline and MULTI made on it, which made each of ours cost ~40 us more.
  const queueRedis = cleanup.add('redis-queue', createRedis(config, 'mcpt-api-queue'), closeRedis);
  const connectionLog = new RedisConnectionLog(log, {
    target: describeRedisTarget(config.REDIS_URL, config.REDIS_CLUSTER_NODES),
    intervalMs: config.REDIS_DOWN_LOG_INTERVAL_MS,
  });
  for (const connection of [redis, subscriberRedis, queueRedis]) connectionLog.watch(connection);
  // Requests in flight send their commands in the same turns: one socket write per turn, not per command.
  coalesceWrites(redis);
  coalesceWrites(queueRedis);
  const engine = cleanup.add(
    'engine',
    createEngine({ redis, queues: queueRedis, subscriber: subscriberRedis }, config),
    (e) => e.close(),
  );
  return { redis, engine };
}

/** What both wires' use cases share: the engine's objects, the catalog view, security and metrics. */
async function apiServices(
  config: ApiConfig,
  log: Logger,
  auth: Authenticator,
  redis: RedisClient,
  engine: Engine,
  cleanup: CleanupStack,
  stopping: AbortSignal,
): Promise<ApiServices> {
  const { keys, store } = engine;
  const metrics = new RunnerMetrics('api');
  store.observe(metrics.taskObserver());
  const auditLog = auditLogger(log);
  store.observe(auditObserver(auditLog));
  if (config.DASHBOARD_FIGURES) store.observe(engine.activity.observer()); // the dashboard's charts (activity.ts)
  const security = securityServices(config, redis, keys, auth, auditLog);
  registerSecurityCounters(metrics.registry, security.rates);
  warnAboutSecurity(log, config, security.auth);
  // tools/list is answered from this cache; a publisher's message or the periodic reload renews it.
  cleanup.add('catalog-refusals', logCatalogRefusals(engine.catalog, log), (unsubscribe) => unsubscribe());
  const catalogView = new CatalogView(engine.catalog, engine.subscriber, {
    reloadMs: config.CATALOG_RELOAD_MS,
    onError: (error) => log.warn('tool catalog not read', { error: String(error) }),
  });
  await catalogView.start();
  cleanup.add('catalog-view', catalogView, (view) => view.close());
  warnWhenCatalogEmpty(catalogView, log);
  return {
    config,
    log,
    store,
    events: engine.events,
    subscriber: engine.subscriber,
    inputs: engine.inputs,
    sessions: engine.sessions,
    tasks: engine.tasks,
    plainCalls: new PlainCalls({
      redis,
      keys,
      store,
      tasks: engine.tasks,
      events: engine.events,
      streamAfterMs: config.RESULT_STREAM_AFTER_MS,
    }),
    handles: new TaskHandles({
      enabled: config.TASK_HANDLES,
      afterMs: config.HANDLE_AFTER_MS,
      prefix: config.TASK_HANDLE_TOOL_PREFIX,
    }),
    tools: new ApiTools(catalogView, engine.arguments, config.CATALOG_EMPTY_WAIT_MS),
    requestStates: new RequestStateSigner(redis, (period) => keys.requestStateKey(period), {
      rotationMs: config.REQUEST_STATE_KEY_ROTATION_MS,
      overlapMs: config.REQUEST_STATE_KEY_OVERLAP_MS,
      recheckMs: config.REQUEST_STATE_KEY_RECHECK_MS,
    }),
    metrics,
    security,
    webhooks: engine.webhooks,
    stopping,
  };
}

function securityServices(
  config: ApiConfig,
  redis: RedisClient,
  keys: Engine['keys'],
  auth: Authenticator,
  auditLog: Logger,
): SecurityServices {
  return {
    auth,
    rates: new RateLimiter(redis, keys, {
      windowMs: config.RATE_LIMIT_WINDOW_MS,
      perPrincipal: config.RATE_LIMIT_PER_PRINCIPAL,
      perAddress: config.RATE_LIMIT_PER_ADDRESS,
      failedLookups: config.RATE_LIMIT_FAILED_LOOKUPS,
      failedLookupsPerAddress: config.RATE_LIMIT_FAILED_LOOKUPS_PER_ADDRESS,
      initializePerPrincipal: config.RATE_LIMIT_INITIALIZE_PER_PRINCIPAL,
      initializePerAddress: config.RATE_LIMIT_INITIALIZE_PER_ADDRESS,
    }),
    connections: new ConnectionSlots(redis, keys, config.MAX_STREAMS_PER_SESSION),
    audit: auditLog,
  };
}

/** The express app with the operators' routes (health, metrics, dashboard) and the external systems' callbacks. */
async function expressApp(
  config: ApiConfig,
  services: ApiServices,
  redis: RedisClient,
  engine: Engine,
  cleanup: CleanupStack,
): Promise<express.Express> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.TRUST_PROXY); // req.ip: the client address behind a proxy (per-address limits)
  const { admin, queue, store } = engine;
  const { log, metrics } = services;
  app.use(
    await operationsRouter({
      config,
      redis,
      admin,
      queue,
      metrics,
      engine,
      audit: services.security.audit,
      log,
      cleanup,
      catalog: () => services.tools.view.entries().values(),
      catalogRefused: () => services.tools.view.refusals().length,
    }),
  );
  if (config.CALLBACK_SECRET) {
    const { external } = engine;
    const deps = { secret: config.CALLBACK_SECRET, maxBodyBytes: config.MAX_BODY_BYTES, store, external, log };
    app.use(callbacksRouter(deps)); // reports of external systems on their tasks (docs/external-tools.md)
  }
  // Events for tasks whose tools wait for them (docs/durable-execution.md, "Waits").
  app.use(
    signalsRouter({
      signals: engine.signals,
      auth: services.security.auth,
      rates: services.security.rates,
      adminToken: config.ADMIN_TOKEN,
      callbackSecret: config.CALLBACK_SECRET,
      maxBodyBytes: config.MAX_BODY_BYTES,
      audit: services.security.audit,
      log,
    }),
  );
  return app;
}

function urlOf(server: Server, bindHost: string): string {
  const { port } = server.address() as AddressInfo;
  const host = bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  return `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/mcp`;
}

function reloadKeys(config: ApiConfig, services: ApiServices): void {
  const { security, log } = services;
  try {
    const count = security.auth.reloadKeyFile();
    audit(security.audit, AuditEvent.KeysReloaded, { file: config.AUTH_API_KEYS_FILE, keys: count });
  } catch (error) {
    log.error('API keys not reloaded; the previous keys stay in force', { error: (error as Error).message });
  }
}

/** Stops accepting connections and ends idle keep-alive ones; requests in flight (tasks/result) are cut off. */
async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Long-polling tasks/result requests would hold shutdown open; clients retry them on another replica.
  setTimeout(() => server.closeAllConnections(), 1000).unref();
  await closed;
}

/** Says loudly at start-up when anyone who reaches the port can use the api, and what that means. */
function warnAboutSecurity(log: Logger, config: ApiConfig, auth: Authenticator): void {
  if (!isLoopbackHost(config.HOST) && config.ALLOWED_ORIGINS.length === 0) {
    log.warn(
      `HOST=${config.HOST} is not a loopback address and ALLOWED_ORIGINS is empty: every request that carries an ` +
        'Origin header (any browser page) is refused with 403. Set ALLOWED_ORIGINS to the origins of your browser ' +
        'clients, e.g. https://app.example.com.',
    );
  }
  const closedMetrics = metricsWarning(metricsGate(config));
  if (closedMetrics !== undefined) log.warn(closedMetrics);
  for (const warning of auth.warnings) log.warn(warning);
  if (auth.enabled) {
    log.info('authentication on: every /mcp request needs a bearer token; tasks are bound to its principal', {
      methods: auth.methods,
    });
    return;
  }
  log.warn(
    '*** AUTHENTICATION IS OFF *** anyone who can reach this port can run tools. Tasks are bound only to the ' +
      'MCP session that created them (its id is the only secret). Set AUTH_API_KEYS, AUTH_API_KEYS_FILE, ' +
      'AUTH_JWT_SECRET or AUTH_JWKS_URL before exposing the api beyond this machine; see docs/configuration.md, ' +
      '"Security".',
    { tasksList: config.TASKS_LIST_ENABLED },
  );
}

/**
 * An empty catalog means no worker serves any tool: every call would answer Unknown tool. Said once when this replica
 * finds it so (at start, or when the last tool leaves), and again each time it becomes empty after having tools; not
 * repeated while it stays empty.
 */
function warnWhenCatalogEmpty(view: CatalogView, log: Logger): void {
  const warn = () =>
    log.warn('the tool catalog is empty: no live worker serves any tool; calls answer Unknown tool until one starts', {
      hint: 'start a worker with MCPT_TOOLS=./tools.js (or --demo for the demo tools) against the same REDIS_URL and REDIS_PREFIX',
    });
  if (view.loaded && view.entries().size === 0) warn();
  view.onChange((entries) => {
    if (entries.size === 0) warn();
  });
}
