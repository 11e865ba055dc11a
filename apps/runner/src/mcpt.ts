#!/usr/bin/env node
// The `mcpt` command of the installed package: the processes (`api`, `worker`, `start`) and the operator commands
// (overview, list, inspect, cancel, retry, purge). Runs on plain Node: this file is built into dist/mcpt.js.
import { loadApiConfig, startApi } from '@mcp-tasks/api';
import { removeStartState, runCli, writeStartState } from '@mcp-tasks/cli';
import { CatalogConflictError, ConfigError, stopOnShutdownSignal } from '@mcp-tasks/engine';
import { loadWorkerConfig, servedSources, startWorker } from '@mcp-tasks/worker';
import { startLocalRedis, type LocalRedis } from './local-redis.ts';

const USAGE = `Usage: mcpt <command> [options]

Processes (configured by environment variables: the manual's "Settings", and docs/configuration.md):
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
  const starting = startApi(loadApiConfig());
  stopOnShutdownSignal(starting, async (api, signal) => {
    api.log.info('shutting down', { signal });
    await api.close();
  });
  const api = await starting;
  process.on('SIGHUP', () => api.reloadKeys());
}

async function runWorker(): Promise<void> {
  const starting = startConfiguredWorker();
  stopOnShutdownSignal(starting, async (worker, signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
  await starting;
}

/** A worker as the environment describes it: MCPT_TOOLS, the upstreams, the demo tools if asked (--demo). */
async function startConfiguredWorker() {
  const config = loadWorkerConfig();
  const { tools, upstreams } = await servedSources(config);
  return startWorker(config, tools, { upstreams });
}

/**
 * Everything on one machine: Redis (REDIS_URL, or a redis-server with AOF under .mcpt/redis that dies with this
 * process), one api, one worker; and a note of which Redis, for the operator commands (start-state.ts in the cli).
 */
async function runAll(): Promise<void> {
  const starting = startAll();
  stopOnShutdownSignal(starting, async ({ api, worker, stopRedis }) => {
    removeStartState(process.pid, process.env);
    await api.close();
    await worker.close();
    await stopRedis();
  });
  await starting;
}

async function startAll() {
  let redis: LocalRedis | undefined;
  if (!process.env['REDIS_URL'] && !process.env['REDIS_CLUSTER_NODES']) {
    redis = await startLocalRedis();
    process.env['REDIS_URL'] = redis.url;
  }
  const stopRedis = async () => redis?.stop();
  try {
    const worker = await startConfiguredWorker();
    const api = await startApi(loadApiConfig()).catch(async (error: unknown) => {
      await worker.close();
      throw error;
    });
    api.log.info(`MCP endpoint: ${api.url}`);
    noteStart(api.url);
    return { api, worker, stopRedis };
  } catch (error) {
    await stopRedis();
    throw error;
  }
}

function noteStart(apiUrl: string): void {
  const redis = Object.fromEntries(
    ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_PREFIX'].flatMap((name) => {
      const value = process.env[name];
      return value ? [[name, value]] : [];
    }),
  );
  const path = writeStartState({ pid: process.pid, redis, apiUrl, startedAt: new Date().toISOString() }, process.env);
  console.error(`[mcpt start] operator commands (mcpt overview, list, ...) read this Redis: noted in ${path}`);
}
