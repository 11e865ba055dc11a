// The gateway workload (docs/gateway.md, "Cost"): what a call through the gateway costs over a direct call with the
// official SDK client to the same server, in the same run (server-everything's echo over stdio and Streamable HTTP),
// measured on the gateway's own call path in this process; the same call end to end through our api and a worker
// beside our own no-op tool; and the memory and child processes of a worker fronting several real servers.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createLogger, type CleanupStack } from '@mcp-tasks/engine';
import { toolQueueName, type ToolContext, type ToolDefinition } from '@mcp-tasks/protocol';
import { UpstreamTools } from '@mcp-tasks/worker/internals';
import { parseUpstreams } from '@mcp-tasks/worker';
import { Queue } from 'bullmq';
import { freePort } from '../lib/ports.ts';
import type { BenchClient } from './mcp.ts';
import { repoRoot, startWorker } from './processes.ts';
import { percentile } from './stats.ts';
import type { BenchSystem } from './system.ts';

const EVERYTHING = join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const THINKING = join(repoRoot, 'node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js');
const FILESYSTEM = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const ECHO = { message: 'bench' };

/** p50 (and p99) of sequential calls, ms, per repetition. */
export interface CallLatency {
  p50: number[];
  p99: number[];
}

export interface GatewayResult {
  samples: number;
  /** A direct SDK client and the gateway's call path (in this process), to the same server. */
  stdio: { direct: CallLatency; gateway: CallLatency };
  http: { direct: CallLatency; gateway: CallLatency };
  /** Through our api and a worker: the upstream's echo vs our own no-op tool, create -> result p50 per repetition. */
  endToEnd: { gatewayTool: number[]; ownTool: number[] };
  /** A worker fronting server-everything (stdio and HTTP), sequential-thinking and server-filesystem. */
  worker: { upstreams: number; stdioUpstreams: number; rssMb: number; children: number; childrenRssMb: number };
}

/** No task of ours: the gateway's call path needs only what a tool's context gives it. */
function benchContext(): ToolContext {
  const refuse = () => Promise.reject(new Error('the bench answers no input requests'));
  const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  return {
    taskId: 'bench',
    attempt: 1,
    signal: new AbortController().signal,
    progress: () => Promise.resolve(),
    log: silent,
    elicit: refuse,
    sample: refuse,
    listRoots: refuse,
    lastCheckpoint: undefined,
    checkpoint: () => Promise.reject(new Error('the bench keeps no checkpoint')),
    step: async (_name, run) => run(),
    callTool: () => Promise.reject(new Error('the bench starts no child task')),
    sleep: () => Promise.reject(new Error('the bench does not wait')),
    sleepUntil: () => Promise.reject(new Error('the bench does not wait')),
    waitForEvent: () => Promise.reject(new Error('the bench does not wait')),
    signalTask: () => Promise.reject(new Error('the bench sends no event')),
  };
}

async function sequential(count: number, once: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await once();
    times.push(performance.now() - started);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** server-everything over Streamable HTTP on a free port, stopped with the run. */
async function startHttpEverything(cleanup: CleanupStack): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanup.add('server-everything (http)', child, (c) => void c.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port/.test(output)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${String(code)}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

export async function gatewayWorkload(system: BenchSystem): Promise<GatewayResult> {
  const { options, progress, cleanup } = system;
  progress.phase('gateway: starting upstreams');
  const url = await startHttpEverything(cleanup);
  const upstreams = [
    { name: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], prefix: 'stdio_', allow: ['echo'] },
    { name: 'http', url, prefix: 'http_', allow: ['echo'] },
  ];
  const log = createLogger({ service: 'bench-gateway', level: 'error', format: 'json' });
  const gateway = cleanup.add(
    'gateway',
    await UpstreamTools.start(parseUpstreams(upstreams), log, { worker: 'bench', heartbeatMs: 60_000 }),
    (tools) => tools.close(),
  );
  const tool = async (name: string): Promise<ToolDefinition> => {
    for (;;) {
      const found = gateway.current().find((published) => published.entry.name === name);
      if (found) return found.definition;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const viaGateway = { stdio: await tool('stdio_echo'), http: await tool('http_echo') };
  const context = benchContext();
  const direct = {
    stdio: await directClient(
      cleanup,
      new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }),
    ),
    http: await directClient(cleanup, new StreamableHTTPClientTransport(new URL(url))),
  };
  const result: GatewayResult = {
    samples: options.latencySamples,
    stdio: { direct: { p50: [], p99: [] }, gateway: { p50: [], p99: [] } },
    http: { direct: { p50: [], p99: [] }, gateway: { p50: [], p99: [] } },
    endToEnd: { gatewayTool: [], ownTool: [] },
    worker: { upstreams: 0, stdioUpstreams: 0, rssMb: 0, children: 0, childrenRssMb: 0 },
  };
  for (let rep = 1; rep <= options.reps; rep++) {
    for (const transport of ['stdio', 'http'] as const) {
      progress.phase(`gateway ${rep}/${options.reps}: ${transport}, direct and through the gateway`);
      const sides = {
        direct: () => direct[transport].callTool({ name: 'echo', arguments: ECHO }),
        gateway: () => viaGateway[transport].run(ECHO, context),
      };
      // Interleaved, each after a warm-up of its own.
      for (const side of ['direct', 'gateway'] as const) {
        await sequential(20, sides[side]);
        const { p50, p99 } = await sequential(options.latencySamples, sides[side]);
        result[transport][side].p50.push(p50);
        result[transport][side].p99.push(p99);
      }
    }
  }
  await endToEnd(system, result);
  return result;
}

async function directClient(
  cleanup: CleanupStack,
  transport: StdioClientTransport | StreamableHTTPClientTransport,
): Promise<Client> {
  const client = new Client({ name: 'bench-direct', version: '1.0.0' });
  await client.connect(transport);
  return cleanup.add('direct sdk client', client, (c) => c.close());
}

/**
 * A worker process fronting four real servers (three over stdio): the echo end to end through our api beside our own
 * no-op tool, then the worker's memory and child processes.
 */
async function endToEnd(system: BenchSystem, result: GatewayResult): Promise<void> {
  const { options, progress, cleanup } = system;
  progress.phase('gateway: a worker fronting four upstream servers');
  const url = await startHttpEverything(cleanup);
  const upstreams = [
    { name: 'everything', command: process.execPath, args: [EVERYTHING, 'stdio'], prefix: 'gw_' },
    { name: 'thinking', command: process.execPath, args: [THINKING], prefix: 'think_' },
    { name: 'files', command: process.execPath, args: [FILESYSTEM, system.dir], prefix: 'fs_' },
    { name: 'remote', url, prefix: 'remote_' },
  ];
  const config = join(system.dir, 'upstreams.json');
  writeFileSync(config, JSON.stringify({ upstreams }));
  const queue = cleanup.add(
    'gateway echo queue',
    new Queue(toolQueueName('gw_echo'), { connection: system.redis, prefix: system.prefix }),
    (q) => q.close(),
  );
  const worker = await startWorker(
    cleanup,
    system.dir,
    { ...system.env, MCPT_DEMO: '0', MCPT_UPSTREAMS: config },
    99,
    async () => (await queue.getWorkersCount()) > 0,
  );
  const [client] = system.clients;
  if (!client) throw new Error('the bench has no client');
  const on = (of: BenchClient) => async (tool: string, args: Record<string, unknown>) =>
    of.result(await of.createTask(tool, args));
  const once = on(client);
  for (let rep = 1; rep <= options.reps; rep++) {
    progress.phase(`gateway ${rep}/${options.reps}: end to end, gateway echo and our no-op`);
    for (const [key, tool, args] of [
      ['gatewayTool', 'gw_echo', ECHO],
      ['ownTool', 'wait', { seconds: 0 }],
    ] as const) {
      await sequential(20, () => once(tool, args));
      result.endToEnd[key].push((await sequential(options.latencySamples, () => once(tool, args))).p50);
    }
  }
  // Every upstream used by as many calls at once as its concurrency allows, as a worker in service would be.
  const burst = system.clients.slice(0, 4).map(on);
  const thought = { thought: 'x', thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false };
  for (const [tool, args] of [
    ['gw_trigger-long-running-operation', { duration: 1, steps: 1 }],
    ['think_sequentialthinking', thought],
    ['fs_list_allowed_directories', {}],
    ['remote_echo', ECHO],
  ] as const) {
    await Promise.all(burst.map((call) => call(tool, args)));
  }
  const children = descendants(worker.pid);
  result.worker = {
    upstreams: upstreams.length,
    stdioUpstreams: upstreams.filter((upstream) => 'command' in upstream).length,
    rssMb: rssMb(worker.pid),
    children: children.length,
    childrenRssMb: children.reduce((total, pid) => total + rssMb(pid), 0),
  };
}

/** Resident memory of a process, MB (Linux /proc; NaN elsewhere). */
function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** Every process below `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children: number[] = [];
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
      } catch {
        continue;
      }
      for (const child of children) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}
