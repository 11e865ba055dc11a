// Builds one api process: Redis connections, services, the express app and the HTTP server, released in reverse
// order on close.
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  CleanupStack,
  closeRedis,
  createLogger,
  createRedis,
  createToolQueue,
  KeySpace,
  SessionStore,
  Subscriber,
  TaskService,
  TaskStore,
  type Logger,
} from '@mcp-tasks/engine';
import { toolRegistry } from '@mcp-tasks/tools';
import type { ApiConfig } from './config.ts';
import type { ApiServices } from './context.ts';
import { mcpRouter } from './transport.ts';

export interface RunningApi {
  url: string;
  log: Logger;
  close(): Promise<void>;
}

export async function startApi(config: ApiConfig): Promise<RunningApi> {
  const log = createLogger({ service: 'api', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const cleanup = new CleanupStack();
  try {
    const keys = new KeySpace(config.REDIS_PREFIX);
    const redis = cleanup.add('redis', createRedis(config.REDIS_URL, 'mcpt-api'), closeRedis);
    const subscriberRedis = cleanup.add('redis-subscriber', createRedis(config.REDIS_URL, 'mcpt-api-sub'), closeRedis);
    for (const connection of [redis, subscriberRedis]) {
      connection.on('error', (error: Error) => log.warn('redis connection error', { error: error.message }));
    }
    const queue = cleanup.add('queue', createToolQueue(redis, config.REDIS_PREFIX), (q) => q.close());
    const store = new TaskStore(redis, keys);
    const services: ApiServices = {
      config,
      log,
      store,
      sessions: new SessionStore(redis, keys, config.SESSION_IDLE_TTL_MS),
      tasks: new TaskService(store, queue, redis, new Subscriber(subscriberRedis), {
        defaultTtlMs: config.TASK_TTL_DEFAULT_MS,
        maxTtlMs: config.TASK_TTL_MAX_MS,
        minTtlMs: 1000,
        pollIntervalMs: config.TASK_POLL_INTERVAL_MS,
        recheckMs: config.RESULT_RECHECK_MS,
      }),
      tools: toolRegistry,
    };
    await redis.ping();

    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    // Liveness answers while the process runs; readiness also needs Redis.
    app.get('/healthz', (_req, res) => {
      res.json({ status: 'ok' });
    });
    app.get('/readyz', (_req, res) => {
      redis.ping().then(
        () => res.json({ status: 'ready' }),
        (error: Error) => res.status(503).json({ status: 'unavailable', reason: `redis: ${error.message}` }),
      );
    });
    app.use(mcpRouter(services));
    const server: Server = app.listen(config.PORT, config.HOST);
    await once(server, 'listening');
    cleanup.add('http-server', server, closeServer);
    const { port } = server.address() as AddressInfo;
    const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
    const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/mcp`;
    log.info(`listening on ${url}`, { url, tools: toolRegistry.names() });
    return {
      url,
      log,
      close: () =>
        cleanup.releaseAll((name, error) => log.error('shutdown step failed', { step: name, error: String(error) })),
    };
  } catch (error) {
    await cleanup.releaseAll();
    throw error;
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
