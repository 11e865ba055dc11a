// Real api and worker processes for integration tests, started the way operators start them (environment only).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis, type Cluster } from 'ioredis';
import { freePort } from '../../scripts/lib/ports.ts';
import { sleep } from './mcp-client.ts';
import { modernPost } from './modern-client.ts';
import type { RedisClusterFixture } from './redis-cluster.ts';
import { sharedRedisUrl, uniquePrefix } from './redis-server.ts';
import { track } from './resources.ts';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `node --import tsx` from any working directory (a temp project's, say). */
export const TSX_IMPORT = ['--import', import.meta.resolve('tsx')];

/** An api or a worker as the tests see it, whether a process of its own or inside the test's (in-process.ts). */
export interface ServiceHandle {
  name: string;
  logs: string[];
  /** Parsed JSON log lines. */
  records(): Record<string, unknown>[];
  /** Still running: a process that has not exited, a service in process not closed (in-process.ts). */
  alive(): boolean;
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export interface ChildHandle extends ServiceHandle {
  process: ChildProcess;
}

export interface ApiHandle extends ChildHandle {
  url: string;
  port: number;
}

/** The JSON lines of a service's output, parsed (any other line left out). */
export function parseRecords(logs: readonly string[]): Record<string, unknown>[] {
  return logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

export async function spawnService(
  name: string,
  entry: string,
  env: Record<string, string>,
  readyMessage: RegExp,
  /** Another program than `node --import tsx <entry>` (e.g. an installed bin), and its working directory. */
  options: { command?: string; args?: string[]; cwd?: string } = {},
): Promise<ChildHandle> {
  const child = spawn(options.command ?? process.execPath, options.args ?? ['--import', 'tsx', entry], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  let ready: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => (ready = resolve));
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() === '') continue;
      logs.push(line);
      if (readyMessage.test(line)) ready();
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = once(child, 'exit');
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
    return child.exitCode;
  };
  const release = track(`${name} (pid ${child.pid})`, () => stop('SIGKILL').then(() => undefined));
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new Error(`${name} did not become ready within 60 s:\n${logs.join('\n')}`)),
      60_000,
    ).unref(),
  );
  const died = exited.then(([code]) => {
    throw new Error(`${name} exited with ${String(code)} before it was ready:\n${logs.join('\n')}`);
  });
  try {
    await Promise.race([readyPromise, timeout, died]);
  } catch (error) {
    await release();
    throw error;
  }
  died.catch(() => undefined);
  return {
    name,
    process: child,
    logs,
    records: () => parseRecords(logs),
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async (signal, timeoutMs) => {
      const code = await stop(signal, timeoutMs);
      await release();
      return code;
    },
  };
}

export async function spawnApi(env: Record<string, string>): Promise<ApiHandle> {
  const port = await freePort();
  const handle = await spawnService(
    'api',
    'apps/api/src/main.ts',
    { HOST: '127.0.0.1', PORT: String(port), ...env },
    /listening on/,
  );
  return { ...handle, port, url: `http://127.0.0.1:${port}/mcp` };
}

/**
 * A worker at LOG_LEVEL=debug unless `env` says otherwise: tests find the worker that settled a task by its "task
 * settled" line, which is a debug line (the audit record is the info line of a settlement). Without tools or
 * upstreams in `env` it serves the demo tools (MCPT_DEMO=1), as the tests' workers always did.
 */
export function spawnWorker(env: Record<string, string>): Promise<ChildHandle> {
  return spawnService('worker', 'apps/worker/src/main.ts', workerEnv(env), /worker ready/);
}

/** A test worker's environment over `env`: spawnWorker's defaults (above), shared with in-process.ts. */
export function workerEnv(env: Record<string, string>): Record<string, string> {
  const named = ['MCPT_TOOLS', 'MCPT_UPSTREAMS', 'UPSTREAM_MCP_COMMAND', 'UPSTREAM_MCP_URL'].some((key) => env[key]);
  const demo: Record<string, string> = named ? {} : { MCPT_DEMO: '1' };
  return { LOG_LEVEL: 'debug', ...demo, ...env };
}

/** A system whose apis and workers are handles of types A and W (processes here, or in-process.ts's). */
export interface SystemOf<A extends ServiceHandle & { url: string }, W extends ServiceHandle> {
  redisUrl: string;
  prefix: string;
  apiUrl: string;
  apis: A[];
  workers: W[];
  /** A plain connection for inspecting Redis from tests (a cluster client on a cluster). */
  redis: Redis | Cluster;
  env: Record<string, string>;
  addWorker(extraEnv?: Record<string, string>): Promise<W>;
  stop(): Promise<void>;
}

export type System = SystemOf<ApiHandle, ChildHandle>;

export interface SystemOptions {
  apis?: number;
  workers?: number;
  /** Environment for every process (e.g. LIST_PAGE_SIZE). */
  env?: Record<string, string>;
  redisUrl?: string;
  /** Run on this Redis Cluster instead (REDIS_CLUSTER_NODES, a prefix with a hash tag). */
  cluster?: RedisClusterFixture;
}

/** How a system starts one api and one worker from their environment. */
export interface Starters<A extends ServiceHandle & { url: string }, W extends ServiceHandle> {
  api(env: Record<string, string>): Promise<A>;
  worker(env: Record<string, string>): Promise<W>;
}

/** Redis (shared or given), api replicas and workers on one fresh key prefix, each a process of its own. */
export function startSystem(options: SystemOptions = {}): Promise<System> {
  return startSystemWith({ api: spawnApi, worker: spawnWorker }, options);
}

/** startSystem with the apis and workers `starters` start (in-process.ts starts them inside the test's process). */
export async function startSystemWith<A extends ServiceHandle & { url: string }, W extends ServiceHandle>(
  starters: Starters<A, W>,
  options: SystemOptions = {},
): Promise<SystemOf<A, W>> {
  const cluster = options.cluster;
  const redisUrl = cluster ? '' : (options.redisUrl ?? (await sharedRedisUrl()));
  const prefix = cluster ? `{${uniquePrefix()}}` : uniquePrefix();
  const redisEnv: Record<string, string> = cluster
    ? { REDIS_CLUSTER_NODES: clusterNodesValue(cluster) }
    : { REDIS_URL: redisUrl };
  const env = { ...redisEnv, REDIS_PREFIX: prefix, ...options.env };
  const started = await Promise.allSettled<A | W>([
    ...Array.from({ length: options.apis ?? 1 }, () => starters.api(env)),
    ...Array.from({ length: options.workers ?? 1 }, () => starters.worker(env)),
  ]);
  const failure = started.find((outcome) => outcome.status === 'rejected');
  if (failure) {
    // Stop what did start, so a failed start-up leaks no process.
    await Promise.all(started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.stop()] : [])));
    throw failure.reason;
  }
  const children = started.map((outcome) => (outcome as PromiseFulfilledResult<A | W>).value);
  const apis = children.slice(0, options.apis ?? 1) as A[];
  const workers = children.slice(options.apis ?? 1) as W[];
  // The cluster's own inspection client is closed by the cluster fixture.
  const redis = cluster ? cluster.client() : new Redis(redisUrl, { maxRetriesPerRequest: null });
  // Tests restart Redis under it: it reconnects; the refused attempts meanwhile are not failures.
  redis.on('error', () => undefined);
  const releaseRedis = track(`inspection redis (${prefix})`, () => {
    if (!cluster) redis.disconnect();
  });
  const first = apis[0];
  if (!first) throw new Error('a system needs at least one api');
  try {
    await listedByApis(apis, redis, prefix);
  } catch (error) {
    await Promise.all([...apis, ...workers].map((child) => child.stop()));
    await releaseRedis();
    throw error;
  }
  return {
    redisUrl,
    prefix,
    apiUrl: first.url,
    apis,
    workers,
    redis,
    env,
    async addWorker(extraEnv = {}) {
      const worker = await starters.worker({ ...env, ...extraEnv });
      workers.push(worker);
      await listedByApis(apis, redis, prefix);
      return worker;
    },
    async stop() {
      await Promise.all([...apis, ...workers].map((child) => child.stop()));
      await releaseRedis();
    },
  };
}

/** How long an api may take to list what the workers published before the start counts as failed. */
const LISTED_WITHIN_MS = 30_000;

/**
 * Waits until every running api lists (or refuses: docs/catalog.md, "Bounds") each tool the workers published. A
 * worker is ready once it has published its tools, and an api reads them a moment later (on the catalog's channel): a
 * test that called a tool, or named one in a span or a listing, right after the start could meet an api that has not
 * read it yet. A host lists tools before it calls them; the tests start where a host would. An api that will not
 * answer an anonymous tools/list (its auth is on) is not asked: its tests list with their own credentials.
 */
async function listedByApis(
  apis: readonly (ServiceHandle & { url: string })[],
  redis: Redis | Cluster,
  prefix: string,
): Promise<void> {
  const published = await redis.hkeys(`${prefix}:catalog:tools`);
  if (published.length === 0) return;
  const deadline = Date.now() + LISTED_WITHIN_MS;
  await Promise.all(
    apis.map(async (api) => {
      let missing: string[] | undefined = published;
      let failure: unknown;
      // An api a test stopped or killed is not waited for.
      while (api.alive()) {
        try {
          missing = await unlisted(api.url, published);
          failure = undefined;
        } catch (error) {
          failure = error;
        }
        if (missing === undefined || missing.length === 0) return;
        if (Date.now() > deadline) {
          throw new Error(
            `${api.name} did not list ${missing.join(', ')} within ${LISTED_WITHIN_MS} ms of the start` +
              (failure instanceof Error ? ` (last asked: ${failure.message})` : ''),
          );
        }
        await sleep(25);
      }
    }),
  );
}

/** The published tools the api neither lists nor refuses (beyond its refusal count); undefined: it will not say. */
async function unlisted(apiUrl: string, published: readonly string[]): Promise<string[] | undefined> {
  const listed = new Set<string>();
  let cursor: unknown;
  do {
    const reply = await modernPost(apiUrl, 'tools/list', cursor === undefined ? {} : { cursor });
    const result = reply.body.result;
    if (reply.status === 401 || reply.status === 403) return undefined;
    if (!result) throw new Error(`tools/list: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
    for (const tool of (result['tools'] ?? []) as { name: string }[]) listed.add(tool.name);
    cursor = result['nextCursor'];
  } while (cursor !== undefined && cursor !== null);
  const missing = published.filter((name) => !listed.has(name));
  if (missing.length === 0) return missing;
  const ready = (await (await fetch(new URL('/readyz', apiUrl))).json()) as { catalog?: { refused?: number } };
  return missing.length <= (ready.catalog?.refused ?? 0) ? [] : missing;
}

/** REDIS_CLUSTER_NODES for a test cluster: its password travels in the first entry's URL. */
export function clusterNodesValue(cluster: RedisClusterFixture): string {
  const [first, ...rest] = cluster.nodes;
  const auth = cluster.password ? `:${encodeURIComponent(cluster.password)}@` : '';
  return [`redis://${auth}${first}`, ...rest].join(',');
}
