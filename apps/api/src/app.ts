// Builds one api process: Redis connections and services (services.ts), the express app and the HTTP server,
// released in reverse order on close.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  audit,
  AuditEvent,
  CleanupStack,
  createLogger,
  listenOn,
  startTracing,
  tracingRequested,
  type Engine,
  type Logger,
  type RedisClient,
} from '@mcp-tasks/engine';
import { createAuthenticator } from './auth.ts';
import type { ApiConfig } from './config.ts';
import type { ApiServices } from './context.ts';
import { operationsRouter } from './ops.ts';
import { callbacksRouter } from './callbacks.ts';
import { apiServices, openEngine } from './services.ts';
import { signalsRouter } from './signals.ts';
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
