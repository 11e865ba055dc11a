// `pnpm start`: the whole system on one machine — Redis (REDIS_URL, or a local redis-server with AOF under
// .data/), one api and one worker — then a demo task and a copy-paste example. Ctrl-C stops everything.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { freePort, portIsFree } from './lib/ports.ts';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { authRequired, curlExample, demoToken, runDemo } from './demo.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line: string) => console.log(`\x1b[1m[start]\x1b[0m ${line}`);
const children: { name: string; child: ChildProcess }[] = [];

async function main(): Promise<void> {
  const redisUrl = process.env['REDIS_URL'] ?? (await startLocalRedis());
  await waitForRedis(redisUrl);
  const port = process.env['PORT'] ?? '3000';
  const host = process.env['HOST'] ?? '127.0.0.1';
  if (!(await portIsFree(Number(port), host))) {
    throw new Error(`Port ${port} on ${host} is taken: free it or choose another, e.g. PORT=3100 npm start`);
  }
  const env = { ...process.env, REDIS_URL: redisUrl, PORT: port, HOST: host, ...(await startFakeBatch(host, port)) };
  const api = launch('api', ['--import', 'tsx', 'apps/api/src/main.ts'], env);
  // The demo system: the demo tools (MCPT_DEMO=1, and with MCPT_TOOLS yours beside them) unless MCPT_DEMO=0.
  launch('worker', ['--import', 'tsx', 'apps/worker/src/main.ts'], { MCPT_DEMO: '1', ...env });
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/mcp`;
  await waitForApi(url, api);
  say(`MCP endpoint: ${url}`);
  const auth = authRequired(env);
  const token = demoToken(env);
  if (process.env['DEMO'] !== '0') {
    if (auth && token === undefined) say('no demo: the api asks for a token; set MCP_TOKEN to one it accepts');
    else await runDemo(url, say, token);
  }
  const first = auth ? ' (first: export MCP_TOKEN=<one of your keys or tokens>)' : '';
  say(`Try it yourself${first}:\n\n${curlExample(url, auth)}\n`);
  say('Running. Press Ctrl-C to stop.');
}

/**
 * The fake batch system behind the `batch_report` tool (docs/external-tools.md), unless BATCH_SYSTEM_URL names a real
 * one or FAKE_BATCH=0; callbacks are signed with a secret made for this run unless CALLBACK_SECRET is set.
 */
async function startFakeBatch(host: string, apiPort: string): Promise<Record<string, string>> {
  const callback = {
    CALLBACK_SECRET: process.env['CALLBACK_SECRET'] ?? randomBytes(32).toString('hex'),
    CALLBACK_BASE_URL:
      process.env['CALLBACK_BASE_URL'] ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${apiPort}`,
  };
  if (process.env['BATCH_SYSTEM_URL'] || process.env['FAKE_BATCH'] === '0') return callback;
  const port = (await portIsFree(4010, '127.0.0.1')) ? 4010 : await freePort();
  launch('fake-batch', ['--import', 'tsx', 'scripts/fake-batch.ts'], { ...process.env, FAKE_BATCH_PORT: String(port) });
  say(`started the fake batch system on 127.0.0.1:${port} (for the batch_report tool)`);
  return { ...callback, BATCH_SYSTEM_URL: `http://127.0.0.1:${port}` };
}

async function startLocalRedis(): Promise<string> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(
      'No Redis: set REDIS_URL (e.g. REDIS_URL=redis://127.0.0.1:6379 npm start) or install redis-server ' +
        '(Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis).',
    );
  }
  const dir = join(root, '.data', 'redis');
  mkdirSync(dir, { recursive: true });
  const port = (await portIsFree(6390, '127.0.0.1')) ? 6390 : await freePort();
  launch(
    'redis',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
    ],
    process.env,
    'redis-server',
  );
  say(`started redis-server on 127.0.0.1:${port} (data and AOF in .data/redis)`);
  return `redis://127.0.0.1:${port}`;
}

function launch(name: string, args: string[], env: NodeJS.ProcessEnv, command = process.execPath): ChildProcess {
  const child = spawn(command, args, { cwd: root, env, stdio: name === 'redis' ? 'ignore' : 'inherit' });
  children.push({ name, child });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      say(`${name} exited (${signal ?? code}); stopping everything`);
      void stopAll(1);
    }
  });
  return child;
}

let stopping = false;
async function stopAll(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  // Reverse order of start: worker and api first (they finish or hand back work), Redis last (it flushes its AOF).
  for (const { name, child } of [...children].reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await once(child, 'exit');
    clearTimeout(timer);
    say(`${name} stopped`);
  }
  process.exit(exitCode);
}

async function waitForRedis(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  const deadline = Date.now() + 10_000;
  try {
    for (;;) {
      try {
        await redis.connect();
        await redis.ping();
        return;
      } catch (error) {
        redis.disconnect();
        if (Date.now() > deadline) throw new Error(`Redis at ${url} does not answer: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    redis.disconnect();
  }
}

/** Until the api's /readyz answers 200 (listening, Redis reached): open whatever the authentication. */
async function waitForApi(url: string, api: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  const readyz = new URL('/readyz', url);
  while (Date.now() < deadline) {
    if (api.exitCode !== null) throw new Error('the api exited during start-up; see its log above');
    try {
      const response = await fetch(readyz);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the api did not answer at ${url} within 60 s`);
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));
main().catch((error: unknown) => {
  console.error(`\n[start] ${error instanceof Error ? error.message : String(error)}`);
  void stopAll(1);
  if (children.length === 0) process.exit(1);
});
