// The processes a bench run needs: its own redis-server (free port, temp dir, no persistence), our api and workers,
// and raw BullMQ workers. Everything registers its release on one CleanupStack, released in reverse order.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from '../lib/ports.ts';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CleanupStack } from '@mcp-tasks/runtime';
import { Redis } from 'ioredis';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Extra node flags for every Node child, e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const nodeArgs = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter(Boolean);

export interface Child {
  name: string;
  pid: number;
  logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once, as a crash: a worker killed so leaves its catalog entry for CATALOG_GRACE_MS. */
  kill(): Promise<void>;
  /** CPU seconds (user + system) the process has used so far; NaN where /proc is not available. */
  cpuSeconds(): number;
}

/** A temp dir for the run: Redis's dir and every child's log file. Removed on release. */
export function runDir(cleanup: CleanupStack): string {
  return cleanup.add('temp dir', mkdtempSync(join(tmpdir(), 'mcpt-bench-')), (dir) =>
    rmSync(dir, { recursive: true, force: true }),
  );
}

export interface RedisHandle {
  url: string;
  process: Child;
}

export async function startRedis(cleanup: CleanupStack, dir: string): Promise<RedisHandle> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(
      'The bench starts its own redis-server and found none on PATH: install it ' +
        '(Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis).',
    );
  }
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
  const child = launch(cleanup, 'redis-server', 'redis-server', args, {}, dir);
  const url = `redis://127.0.0.1:${port}`;
  await waitFor(child, async () => {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      return (await probe.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  });
  return { url, process: child };
}

export interface ApiHandle extends Child {
  url: string;
}

export async function startApi(
  cleanup: CleanupStack,
  dir: string,
  env: Record<string, string>,
  index = 0,
): Promise<ApiHandle> {
  const port = await freePort();
  const child = launch(
    cleanup,
    `api-${index}`,
    process.execPath,
    [...nodeArgs, '--import', 'tsx', 'apps/api/src/main.ts'],
    { ...env, HOST: '127.0.0.1', PORT: String(port) },
    dir,
  );
  // Readiness by HTTP, not by log line: --log-level warn would hide the line.
  await waitFor(child, () =>
    fetch(`http://127.0.0.1:${port}/readyz`).then(
      (response) => response.ok,
      () => false,
    ),
  );
  return { ...child, url: `http://127.0.0.1:${port}/mcp` };
}

/**
 * A bench baseline's HTTP endpoint in its own process (bare-api.ts, sdk-peer.ts): `script` run with PORT set, ready
 * once GET /readyz answers.
 */
export async function startEndpoint(
  cleanup: CleanupStack,
  dir: string,
  name: string,
  script: string,
  env: Record<string, string>,
): Promise<ApiHandle> {
  const port = await freePort();
  const child = launch(
    cleanup,
    name,
    process.execPath,
    [...nodeArgs, '--import', 'tsx', script],
    { ...env, PORT: String(port) },
    dir,
  );
  await waitFor(child, () =>
    fetch(`http://127.0.0.1:${port}/readyz`).then(
      (response) => response.ok,
      () => false,
    ),
  );
  return { ...child, url: `http://127.0.0.1:${port}/mcp` };
}

/** Starts a worker; `ready` tells when it consumes the queue (its ready log line may be below LOG_LEVEL). */
export async function startWorker(
  cleanup: CleanupStack,
  dir: string,
  env: Record<string, string>,
  index: number,
  ready: () => Promise<boolean>,
): Promise<Child> {
  const child = launch(
    cleanup,
    `worker-${index}`,
    process.execPath,
    [...nodeArgs, '--import', 'tsx', 'apps/worker/src/main.ts'],
    env,
    dir,
  );
  await waitFor(child, ready);
  return child;
}

export interface RawWorkerSpec {
  redisUrl: string;
  prefix: string;
  queue: string;
  concurrency: number;
}

/** A raw BullMQ worker in its own process, as ours run in theirs (see raw-worker.ts). */
export async function startRawWorker(
  cleanup: CleanupStack,
  dir: string,
  spec: RawWorkerSpec,
  index: number,
): Promise<Child> {
  const child = launch(
    cleanup,
    `raw-worker-${spec.queue}-${index}`,
    process.execPath,
    [...nodeArgs, '--import', 'tsx', 'scripts/bench/raw-worker.ts'],
    {
      REDIS_URL: spec.redisUrl,
      RAW_PREFIX: spec.prefix,
      RAW_QUEUE: spec.queue,
      RAW_CONCURRENCY: String(spec.concurrency),
    },
    dir,
  );
  await waitFor(child, () => Promise.resolve(logContains(child, 'raw worker ready')));
  return child;
}

function launch(
  cleanup: CleanupStack,
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  dir: string,
): Child {
  const logFile = join(dir, `${name}.log`);
  // Logs go to a file, not a pipe: draining pipes would cost the bench process CPU on a busy machine.
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      cwd: repoRoot,
      env: { ...process.env, LOG_FORMAT: 'json', NODE_ENV: 'production', ...env },
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  child.on('error', () => undefined);
  const exited = once(child, 'exit').then(() => undefined);
  const stop = async (graceMs = 10_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  let stopped = false;
  const handle: Child = {
    name,
    pid: child.pid ?? -1,
    logFile,
    stop: async (graceMs) => {
      stopped = true;
      await stop(graceMs);
    },
    kill: async () => {
      stopped = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    cpuSeconds: () => processCpuSeconds(child.pid ?? -1),
  };
  cleanup.add(name, handle, () => (stopped ? undefined : stop(2000)));
  return handle;
}

function logContains(child: Child, text: string): boolean {
  try {
    return readFileSync(child.logFile, 'utf8').includes(text);
  } catch {
    return false;
  }
}

/** The last lines of a child's log, for error messages. */
export function logTail(child: Child, lines = 20): string {
  try {
    return readFileSync(child.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitFor(child: Child, ready: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(child.pid)) throw new Error(`${child.name} exited during start-up:\n${logTail(child)}`);
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${child.name} was not ready within ${timeoutMs / 1000} s:\n${logTail(child)}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const CLOCK_TICKS_PER_SECOND = 100;

/** utime + stime of a process from /proc (Linux), in seconds. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields after it are space separated.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}
