// What a newcomer reads from the processes when something is off (issue 31, item 6): a tool's failure at warn with
// its stack; while Redis is down, one warning, then a counted line per REDIS_DOWN_LOG_INTERVAL_MS and one line when
// it is back, with no stacks; a port in use, one sentence naming the setting and exit status 1.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../scripts/lib/ports.ts';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { repoRoot, spawnService, startSystem, TSX_IMPORT, type ChildHandle } from '../support/processes.ts';
import { sharedRedisUrl, startRedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node --import tsx <entry> [...args]` to its exit (within 60 s) and returns what it printed. */
async function runToExit(entry: string, args: string[], env: Record<string, string>, cwd = repoRoot): Promise<Exited> {
  const child = spawn(process.execPath, [...TSX_IMPORT, join(repoRoot, entry), ...args], {
    cwd,
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const release = track(`${entry} (pid ${child.pid})`, () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  await release();
  return { code, stdout, stderr };
}

async function occupy(): Promise<{ server: Server; port: number }> {
  const port = await freePort();
  const server = createServer();
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return { server, port };
}

const messages = (child: ChildHandle, message: string) => child.records().filter((r) => r['message'] === message);

describe('what the processes say when something is off (issue 31)', function () {
  this.timeout(120_000);

  it('logs a tool failure at warn with the stack of the throw (issue 31)', async () => {
    const system = await startSystem();
    try {
      const client = await McpTestClient.connect(system.apiUrl);
      const task = await client.createTask('crash', { message: 'disk on fire' });
      await client.rpc('tasks/result', { taskId: String(task['taskId']) });
      const [worker] = system.workers;
      const line = await eventually(() => messages(worker!, 'tool failed')[0], 20_000);
      expect(line['level']).to.equal('warn');
      expect(line['error']).to.equal('Error: disk on fire');
      expect(String(line['stack'])).to.match(/^Error: disk on fire\n\s+at .*crash\.ts/);
    } finally {
      await system.stop();
    }
  });

  it('a SIGTERM while api and worker are still starting stops them cleanly once started (exit 0), never by the signal’s default action (issue 31)', async () => {
    const redis = await startRedisServer();
    try {
      // Their start waits for this Redis, which is down until the signals have been sent.
      const server = redis.process!;
      server.kill('SIGTERM');
      await once(server, 'exit');
      const env = { REDIS_URL: redis.url, REDIS_PREFIX: `sigstart${process.pid}` };
      const port = await freePort();
      const lost = /redis connection lost/;
      const children = await Promise.all([
        spawnService('api', 'apps/api/src/main.ts', { ...env, HOST: '127.0.0.1', PORT: String(port) }, lost),
        spawnService('worker', 'apps/worker/src/main.ts', { ...env, MCPT_DEMO: '1' }, lost),
      ]);
      const exits = children.map((child) => once(child.process, 'exit') as Promise<[number | null, string | null]>);
      for (const child of children) child.process.kill('SIGTERM');
      await redis.restart();
      for (const [i, exit] of exits.entries()) {
        expect(await exit, children[i]?.name).to.deep.equal([0, null]);
      }
      for (const child of children) await child.stop();
    } finally {
      await redis.stop();
    }
  });

  it('while Redis is down, api and worker say so once, then one counted line per interval, without stacks; then that it is back (issue 31)', async () => {
    const redis = await startRedisServer();
    try {
      // The port of a Redis that is not running now, and will be again at the end.
      const server = redis.process!;
      server.kill('SIGTERM');
      await once(server, 'exit');
      const env = { REDIS_URL: redis.url, REDIS_PREFIX: `down${process.pid}`, REDIS_DOWN_LOG_INTERVAL_MS: '500' };
      const port = await freePort();
      const lost = /redis connection lost/;
      const [api, worker] = await Promise.all([
        spawnService('api', 'apps/api/src/main.ts', { ...env, HOST: '127.0.0.1', PORT: String(port) }, lost),
        spawnService('worker', 'apps/worker/src/main.ts', { ...env, MCPT_DEMO: '1' }, lost),
      ]);
      try {
        const since = Date.now();
        for (const child of [api, worker]) {
          await eventually(() => (messages(child, 'redis still unreachable').length >= 3 ? true : undefined), 30_000);
        }
        const elapsed = Date.now() - since;
        for (const child of [api, worker]) {
          expect(messages(child, 'redis connection lost: retrying'), child.name).to.have.length(1);
          const still = messages(child, 'redis still unreachable');
          // At most one per interval, from the first warning on (which came before `since`).
          expect(still.length, child.name).to.be.at.most(Math.ceil(elapsed / 500) + 3);
          for (const line of still) {
            expect(line).to.include({ level: 'warn', target: redis.url });
            expect(Number(line['failures'])).to.be.at.least(1);
          }
          const stackLines = child.logs.filter((line) => /^\s+at |^Error: /.test(line));
          expect(stackLines, child.name).to.deep.equal([]);
          expect(child.logs.filter((line) => line.includes('ECONNREFUSED') && !line.startsWith('{'))).to.deep.equal([]);
        }
        await redis.restart();
        for (const child of [api, worker]) {
          await eventually(() => messages(child, 'redis connection back')[0], 30_000);
        }
        await eventually(() => (api.logs.some((line) => line.includes('listening on')) ? true : undefined), 30_000);
        await eventually(() => (worker.logs.some((line) => line.includes('worker ready')) ? true : undefined), 30_000);
      } finally {
        await Promise.all([api.stop(), worker.stop()]);
      }
    } finally {
      await redis.stop();
    }
  });

  it('a busy port is one line naming PORT and HOST, and exit status 1: api and mcpt start (issue 31)', async () => {
    const busy = await occupy();
    try {
      const expected = `port ${busy.port} on 127.0.0.1 is in use: set PORT (or HOST) to another value`;
      const env = { REDIS_URL: await sharedRedisUrl(), HOST: '127.0.0.1', PORT: String(busy.port) };
      const api = await runToExit('apps/api/src/main.ts', [], env);
      expect(api.code).to.equal(1);
      expect(api.stderr.trim()).to.equal(expected);
      // mcpt start with its own redis-server: the worker and that redis-server are stopped again.
      const { REDIS_URL: _, ...noRedis } = env;
      const project = mkdtempSync(join(tmpdir(), 'mcpt-busy-'));
      const start = await runToExit(
        'apps/runner/src/mcpt.ts',
        ['start', '--demo'],
        { ...noRedis, REDIS_URL: '' },
        project,
      );
      rmSync(project, { recursive: true, force: true });
      expect(start.code).to.equal(1);
      expect(start.stderr.trim().split('\n').at(-1)).to.equal(expected);
      expect(start.stderr).not.to.match(/^\s+at /m);
    } finally {
      busy.server.close();
    }
  });

  it('a busy WORKER_METRICS_PORT is one line naming WORKER_METRICS_PORT, and exit status 1 (issue 31)', async () => {
    const busy = await occupy();
    try {
      const worker = await runToExit('apps/worker/src/main.ts', [], {
        REDIS_URL: await sharedRedisUrl(),
        REDIS_PREFIX: `metricsport${process.pid}`,
        MCPT_DEMO: '1',
        WORKER_METRICS_HOST: '127.0.0.1',
        WORKER_METRICS_PORT: String(busy.port),
      });
      expect(worker.code).to.equal(1);
      expect(worker.stderr.trim()).to.equal(
        `port ${busy.port} on 127.0.0.1 is in use: set WORKER_METRICS_PORT (or WORKER_METRICS_HOST) to another value`,
      );
    } finally {
      busy.server.close();
    }
  });
});
