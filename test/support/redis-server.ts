// Redis for tests: REDIS_URL when given, otherwise a redis-server of our own on a free port in a temp dir.
// Tests never touch a shared instance's keys: each file uses its own prefix (uniquePrefix).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/lib/ports.ts';
import { track } from './resources.ts';

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  process?: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the same server again on the same port and dir (for restart tests). */
  restart(signal?: NodeJS.Signals): Promise<void>;
}

export interface RedisServerOptions {
  /** Append-only file on, fsync every second (durability tests). */
  aof?: boolean;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpt-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no'];
  args.push('--appendonly', options.aof ? 'yes' : 'no');
  if (options.aof) args.push('--appendfsync', 'everysec');
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    (await connectWhenUp(port, child)).disconnect();
  };
  await launch();
  const stopChild = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const current = child;
    if (!current || current.exitCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill(signal);
    await exited;
  };
  const release = track(`redis-server:${port}`, async () => {
    await stopChild('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    get process() {
      return child;
    },
    stop: async (signal) => {
      await stopChild(signal);
      await release();
    },
    restart: async (signal) => {
      await stopChild(signal);
      await launch();
    },
  };
  return server;
}

/**
 * A connection to the redis-server `child` on `port` once it answers PING and has loaded its data (AOF replay after
 * a restart); fails with the server's output when it exits or stays silent for 10 s.
 */
export async function connectWhenUp(port: number, child: ChildProcess, password?: string): Promise<Redis> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server on port ${port} exited (${child.exitCode}):\n${output}`);
    const client = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...(password ? { password } : {}),
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const loading = (await client.info('persistence')).includes('loading:1');
      if (!loading && (await client.ping()) === 'PONG') return client;
    } catch {
      // not up yet
    }
    client.disconnect();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer within 10 s:\n${output}`);
}

// Kept on globalThis, like the resource registry (resources.ts): a test file loaded through import() has its own
// instance of this module, and with a variable per instance it started a second server the root hook never
// stopped, which kept mocha (run without --exit) alive after the last test.
const sharing = ((globalThis as Record<symbol, unknown>)[Symbol.for('mcpt.test.sharedRedis')] ??= {}) as {
  server?: Promise<RedisServer>;
};

/** The Redis URL the tests share: REDIS_URL, or one server started for the whole run. */
export async function sharedRedisUrl(): Promise<string> {
  if (process.env['REDIS_URL']) return process.env['REDIS_URL'];
  sharing.server ??= startRedisServer();
  return (await sharing.server).url;
}

export async function stopSharedRedis(): Promise<void> {
  if (!sharing.server) return;
  const server = await sharing.server;
  sharing.server = undefined;
  await server.stop();
}

export function uniquePrefix(): string {
  return `test-${randomUUID().slice(0, 8)}`;
}
