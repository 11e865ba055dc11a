// The redis-server of `mcpt start` when no REDIS_URL is given: AOF under .mcpt/redis, on a free port of 127.0.0.1,
// and bound to the life of the `mcpt start` process, including a death by SIGKILL, which runs no handler of ours.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { ConfigError } from '@mcp-tasks/runtime';

/**
 * A tiny supervisor between us and redis-server: it holds the read end of a pipe whose write end only this process
 * has. When this process ends, however it ends, the kernel closes that end; the supervisor reads end-of-file and
 * stops redis-server with SIGTERM (which writes the AOF out). A clean stop closes the pipe the same way. When
 * redis-server exits on its own (a port taken meanwhile), the supervisor exits with its status. POSIX sh: a
 * background list reads /dev/null unless told otherwise, hence fd 3.
 */
const SUPERVISOR = `
exec 3<&0
redis-server "$@" 3<&- </dev/null &
server=$!
( cat <&3 >/dev/null; kill -TERM "$server" 2>/dev/null ) &
watcher=$!
exec 3<&-
wait "$server"
status=$?
kill "$watcher" 2>/dev/null
exit $status
`;

/** What `sh` answers when it cannot find a command. */
const COMMAND_NOT_FOUND = 127;

export interface LocalRedis {
  url: string;
  /** Stops redis-server (SIGTERM: the AOF is written out) and resolves once it has exited. */
  stop(): Promise<void>;
}

export async function startLocalRedis(): Promise<LocalRedis> {
  const dir = join(process.cwd(), '.mcpt', 'redis');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''];
  // Its own process group: Ctrl-C in the terminal must not stop Redis before the api and the worker have closed.
  const child = spawn('sh', ['-c', SUPERVISOR, 'mcpt-redis', ...args], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  // A supervisor gone already: nothing to tell it, and nothing to crash this process about.
  child.stdin?.on('error', () => undefined);
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const stop = async () => {
    // Closed even after the supervisor exited: its watcher reads the pipe too.
    child.stdin?.end();
    if (child.exitCode !== null || child.signalCode !== null) return;
    await exited;
  };
  const url = `redis://127.0.0.1:${port}`;
  const exitedEarly = exited.then(([code]) => failedStart(code));
  const notSpawned = spawnFailure(child);
  try {
    await Promise.race([listening(port), exitedEarly, notSpawned]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    // Both settle later (the supervisor exits at our stop): that is no failure of the start.
    exitedEarly.catch(() => undefined);
    notSpawned.catch(() => undefined);
  }
  console.error(`[mcpt start] redis-server on ${url} (data and AOF in ${dir})`);
  return { url, stop };
}

function failedStart(code: number | null): never {
  if (code === COMMAND_NOT_FOUND) {
    throw new ConfigError(
      'No Redis: set REDIS_URL or install redis-server (not found on PATH); ' +
        'Debian/Ubuntu: apt-get install redis-server, macOS: brew install redis',
    );
  }
  throw new ConfigError(`redis-server exited (status ${String(code)}) before it listened; set REDIS_URL instead`);
}

async function spawnFailure(child: ChildProcess): Promise<never> {
  const [error] = (await once(child, 'error')) as [Error];
  throw new ConfigError(`No Redis: set REDIS_URL (sh could not be started: ${error.message})`);
}

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await accepts(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`redis-server did not listen on 127.0.0.1:${port} within 10 s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const client = connect(port, '127.0.0.1');
    client.once('connect', () => {
      client.end();
      resolve(true);
    });
    client.once('error', () => resolve(false));
  });
}
