// The services every wire and use case shares (context.ts's ApiServices), built for one api process: its Redis
// connections and engine, security, the catalog view and metrics, each registered on the process's cleanup stack as
// it is acquired (app.ts starts the process around them).
import {
  auditLogger,
  auditObserver,
  CatalogView,
  logCatalogRefusals,
  type CleanupStack,
  closeRedis,
  coalesceWrites,
  ConnectionSlots,
  createEngine,
  createRedis,
  describeRedisTarget,
  isLoopbackHost,
  metricsWarning,
  RateLimiter,
  RedisConnectionLog,
  registerSecurityCounters,
  RunnerMetrics,
  type Engine,
  type Logger,
  type RedisClient,
} from '@mcp-tasks/engine';
import type { Authenticator } from './auth.ts';
import { TaskHandles } from './calls/handle-policy.ts';
import { PlainCalls } from './calls/plain-calls.ts';
import type { ApiConfig } from './config.ts';
import type { ApiServices, SecurityServices } from './context.ts';
import { metricsGate } from './ops.ts';
import { RequestStateSigner } from './request-state.ts';
import { ApiTools } from './tool-catalog.ts';

/** The api's three Redis connections and the engine built on them. */
export function openEngine(
  config: ApiConfig,
  log: Logger,
  cleanup: CleanupStack,
): { redis: RedisClient; engine: Engine } {
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
export async function apiServices(
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
      calls: engine.sessionCalls,
      store,
      tasks: engine.tasks,
      events: engine.events,
    }),
    handles: new TaskHandles({
      enabled: config.TASK_HANDLES,
      afterMs: config.HANDLE_AFTER_MS,
      prefix: config.TASK_HANDLE_TOOL_PREFIX,
    }),
    tools: new ApiTools(catalogView, engine.arguments, config.CATALOG_EMPTY_WAIT_MS),
    requestStates: new RequestStateSigner(engine.signingKeys, {
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
