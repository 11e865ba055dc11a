// The runner in code: start an api or a worker inside your own process (or your tests). Options override the
// environment variables of docs/configuration.md, which still apply to everything not given here.
import { loadApiConfig, startApi as startApiProcess } from '@mcp-tasks/api';
import type { ToolDefinition } from '@mcp-tasks/protocol';
import {
  loadWorkerConfig,
  parseUpstreams,
  startWorker as startWorkerProcess,
  type UpstreamOptions,
} from '@mcp-tasks/worker';

interface CommonOptions {
  /** REDIS_URL, e.g. `redis://127.0.0.1:6379`. */
  redis?: string;
  /** REDIS_PREFIX: api and workers of one installation share it. */
  prefix?: string;
  /** Any other variable of the configuration table, e.g. `{ LOG_LEVEL: 'warn' }`. */
  env?: Record<string, string | number | boolean>;
}

export interface WorkerOptions extends CommonOptions {
  /** The tools this worker serves (published to the tool catalog). */
  tools: readonly ToolDefinition[];
  /**
   * Existing MCP servers whose tools it serves too (docs/gateway.md): `{ name, command, args }` (stdio) or
   * `{ name, url, headers }` (Streamable HTTP), with `prefix`, `allow`, `deny`, `taskSupport`, `concurrency`,
   * `retrySafe`, `timeoutMs`. `MCPT_UPSTREAMS` and `UPSTREAM_MCP_*` are not read here.
   */
  upstreams?: readonly UpstreamOptions[];
  /** WORKER_CONCURRENCY: jobs of one tool run at once. */
  concurrency?: number;
}

export interface ApiOptions extends CommonOptions {
  /** PORT; 0 picks a free one (read it from `url`). Default 3000. */
  port?: number;
  /** HOST; default 127.0.0.1. */
  host?: string;
}

export interface WorkerHandle {
  /** Finishes running tools within WORKER_SHUTDOWN_GRACE_MS, then closes its connections. */
  close(): Promise<void>;
}

export interface ApiHandle {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  close(): Promise<void>;
}

export async function startWorker(options: WorkerOptions): Promise<WorkerHandle> {
  const config = loadWorkerConfig(
    environment(options, options.concurrency !== undefined ? { WORKER_CONCURRENCY: options.concurrency } : {}),
  );
  const env = environment(options, {});
  const worker = await startWorkerProcess(config, options.tools, {
    upstreams: parseUpstreams(options.upstreams ?? [], env),
  });
  return { close: () => worker.close() };
}

export async function startApi(options: ApiOptions = {}): Promise<ApiHandle> {
  const config = loadApiConfig(
    environment(options, {
      ...(options.port !== undefined ? { PORT: options.port } : {}),
      ...(options.host !== undefined ? { HOST: options.host } : {}),
    }),
  );
  const api = await startApiProcess(config);
  return { url: api.url, close: () => api.close() };
}

function environment(
  options: CommonOptions,
  specific: Record<string, string | number | boolean>,
): Record<string, string | undefined> {
  const given = {
    ...options.env,
    ...(options.redis !== undefined ? { REDIS_URL: options.redis } : {}),
    ...(options.prefix !== undefined ? { REDIS_PREFIX: options.prefix } : {}),
    ...specific,
  };
  return { ...process.env, ...Object.fromEntries(Object.entries(given).map(([key, value]) => [key, String(value)])) };
}
