// The worker's optional HTTP listener (WORKER_METRICS_PORT): /metrics for Prometheus (behind METRICS_TOKEN, or open
// on a loopback bind only) and /healthz; on a loopback bind both answer only a loopback Host. Workers have no other
// HTTP server; the counters they own (tasks finished, durations, queue wait) can only be scraped here.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RunnerMetrics } from '@mcp-tasks/engine';
import {
  hostAllowed,
  hostRefusal,
  listenOn,
  metricsAccess,
  metricsWarning,
  type CleanupStack,
  type Logger,
  type MetricsGate,
} from '@mcp-tasks/runtime';
import type { WorkerConfig } from './config.ts';

/** With WORKER_METRICS_PORT set: the listener, with the gauges of the tasks this worker runs (`running`). */
export async function serveMetrics(
  config: WorkerConfig,
  metrics: RunnerMetrics,
  running: { ids(): readonly string[] },
  log: Logger,
  cleanup: CleanupStack,
): Promise<void> {
  if (config.WORKER_METRICS_PORT === undefined) return;
  metrics.addWorkerGauges(() => running.ids().length, config.WORKER_CONCURRENCY);
  const server = await startMetricsServer(metrics, {
    host: config.WORKER_METRICS_HOST,
    port: config.WORKER_METRICS_PORT,
    ...(config.METRICS_TOKEN !== undefined ? { token: config.METRICS_TOKEN } : {}),
  });
  cleanup.add('metrics-server', server, stopMetricsServer);
  const closed = metricsWarning(gateOf({ host: config.WORKER_METRICS_HOST, token: config.METRICS_TOKEN }));
  if (closed !== undefined) log.warn(closed);
  log.info('metrics served', {
    url: metricsUrl(server, config.WORKER_METRICS_HOST),
    token: config.METRICS_TOKEN !== undefined,
  });
}

export async function startMetricsServer(
  metrics: RunnerMetrics,
  listen: { host: string; port: number; token?: string },
): Promise<Server> {
  const gate = gateOf(listen);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    // On a loopback bind, a loopback Host only: a page that rebinds its name to 127.0.0.1 reads nothing here.
    if (!hostAllowed(req.headers.host, listen.host)) {
      res.writeHead(403, { 'Content-Type': 'text/plain' }).end(hostRefusal(req.headers.host));
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: try /metrics or /healthz\n');
      return;
    }
    const access = metricsAccess(req.headers.authorization, gate);
    if (!access.allowed) {
      res.writeHead(access.status, { 'Content-Type': 'text/plain', ...access.headers }).end(access.text);
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(text),
      (error: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${error.message}\n`),
    );
  });
  await listenOn(server, {
    port: listen.port,
    host: listen.host,
    portVariable: 'WORKER_METRICS_PORT',
    hostVariable: 'WORKER_METRICS_HOST',
  });
  return server;
}

/** Who may read the worker's /metrics: METRICS_TOKEN, or anyone on a loopback WORKER_METRICS_HOST. */
function gateOf(listen: { host: string; token?: string | undefined }): MetricsGate {
  return { token: listen.token, bindHost: listen.host, bindVariable: 'WORKER_METRICS_HOST' };
}

export function metricsUrl(server: Server, host: string): string {
  const { port } = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`;
}

export async function stopMetricsServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
