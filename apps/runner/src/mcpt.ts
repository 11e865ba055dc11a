#!/usr/bin/env node
// The `mcpt` command of the installed package: the processes (`api`, `worker`, `start`) and the operator commands
// (overview, list, inspect, cancel, retry, purge). Runs on plain Node: this file is built into dist/mcpt.js.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { loadApiConfig, startApi } from '@mcp-tasks/api';
import { runCli } from '@mcp-tasks/cli';
import { CatalogConflictError, ConfigError, onShutdownSignal } from '@mcp-tasks/engine';
import { loadWorkerConfig, servedSources, startWorker } from '@mcp-tasks/worker';

const USAGE = `Usage: mcpt <command> [options]

Processes (configured by environment variables; see the README's configuration table):
  api       the MCP endpoint (POST/GET/DELETE /mcp on HOST:PORT); loads no tool code
  worker    runs tools: MCPT_TOOLS=./tools.js,other-package (each exports \`tools\` or a default array),
            and the tools of existing MCP servers: UPSTREAM_MCP_COMMAND, UPSTREAM_MCP_URL or
            MCPT_UPSTREAMS=./upstreams.json; with none of them it refuses to start
  start     a local redis-server (unless REDIS_URL is set), one api and one worker in this process
  --demo    (worker, start) serve the demo tools too (wait, crash, ...; MCPT_DEMO=1): never by default

Operator commands (mcpt <command> --help):
`;

const [command, ...rest] = process.argv.slice(2);
if ((command === 'worker' || command === 'start') && rest.includes('--demo')) process.env['MCPT_DEMO'] = '1';

try {
  if (command === 'api') await runApi();
  else if (command === 'worker') await runWorker();
  else if (command === 'start') await runAll();
  else {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      process.stdout.write(USAGE);
      process.exitCode = await runCli(['--help']);
    } else {
      process.exitCode = await runCli([command, ...rest]);
    }
  }
} catch (error) {
  const known = error instanceof ConfigError || error instanceof CatalogConflictError;
  console.error(known ? (error as Error).message : error);
  process.exit(1);
}

async function runApi(): Promise<void> {
  const api = await startApi(loadApiConfig());
  process.on('SIGHUP', () => api.reloadKeys());
  onShutdownSignal(async (signal) => {
    api.log.info('shutting down', { signal });
    await api.close();
  });
}

async function runWorker(): Promise<void> {
  const worker = await startConfiguredWorker();
  onShutdownSignal(async (signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
}

/** A worker as the environment describes it: MCPT_TOOLS, the upstreams, the demo tools if asked (--demo). */
async function startConfiguredWorker() {
  const config = loadWorkerConfig();
  const { tools, upstreams } = await servedSources(config);
  return startWorker(config, tools, { upstreams });
}

/** Everything on one machine: Redis (REDIS_URL, or a redis-server with AOF under .mcpt/redis), one api, one worker. */
async function runAll(): Promise<void> {
  let redis: ChildProcess | undefined;
  if (!process.env['REDIS_URL'] && !process.env['REDIS_CLUSTER_NODES']) {
    const started = await startLocalRedis();
    redis = started.child;
    process.env['REDIS_URL'] = started.url;
  }
  const stopRedis = async () => {
    if (!redis || redis.exitCode !== null) return;
    redis.kill('SIGTERM');
    await once(redis, 'exit');
  };
  try {
    const worker = await startConfiguredWorker();
    const api = await startApi(loadApiConfig()).catch(async (error: unknown) => {
      await worker.close();
      throw error;
    });
    api.log.info(`MCP endpoint: ${api.url}`);
    onShutdownSignal(async () => {
      await api.close();
      await worker.close();
      await stopRedis();
    });
  } catch (error) {
    await stopRedis();
    throw error;
  }
}

async function startLocalRedis(): Promise<{ child: ChildProcess; url: string }> {
  const dir = join(process.cwd(), '.mcpt', 'redis');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''];
  // Its own process group: Ctrl-C in the terminal must not stop Redis before the api and the worker have closed.
  const child = spawn('redis-server', args, { stdio: 'ignore', detached: true });
  process.on('exit', () => child.kill());
  const failed = once(child, 'error').then(([error]) => {
    throw new ConfigError(
      `No Redis: set REDIS_URL or install redis-server (${(error as Error).message}); ` +
        'Debian/Ubuntu: apt-get install redis-server, macOS: brew install redis',
    );
  });
  const url = `redis://127.0.0.1:${port}`;
  const up = (async () => {
    for (let i = 0; i < 100; i++) {
      if (await accepts(port)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`redis-server did not listen on 127.0.0.1:${port} within 10 s`);
  })();
  await Promise.race([up, failed]);
  failed.catch(() => undefined);
  console.error(`[mcpt start] redis-server on ${url} (data and AOF in ${dir})`);
  return { child, url };
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
