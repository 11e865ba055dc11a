// Everything one bench run measures, started once: Redis, our api and workers on one key prefix, raw BullMQ
// workers on another prefix of the same Redis, MCP clients with their sessions, and the raw producer's queues.
import { randomUUID } from 'node:crypto';
import type { Agent } from 'node:http';
import { closeRedis, createRedis, KeySpace, type ToolJobData } from '@mcp-tasks/engine';
import { CleanupStack } from '@mcp-tasks/runtime';
import { toolQueueName } from '@mcp-tasks/protocol';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { BenchClient, benchAgent } from './mcp.ts';
import type { BenchOptions } from './options.ts';
import {
  logTail,
  runDir,
  startApi,
  startEndpoint,
  startRawWorker,
  startRedis,
  startWorker,
  type ApiHandle,
  type Child,
  type RedisHandle,
} from './processes.ts';
import type { Progress } from './progress.ts';

/** Raw BullMQ queues: no-op jobs (throughput, latency), CPU jobs (scale-out), and one no worker ever serves. */
/** The tools the workloads call. */
const BENCH_TOOLS = ['wait', 'count_primes'] as const;

export const RawQueue = { Noop: 'noop', Primes: 'primes', Idle: 'idle', Bare: 'bare' } as const;
export type RawQueue = (typeof RawQueue)[keyof typeof RawQueue];

export interface RawJobData {
  taskId: string;
  tool: string;
  arguments: Record<string, unknown>;
}

export class BenchSystem {
  readonly cleanup = new CleanupStack();
  dir = '';
  redisServer!: RedisHandle;
  /** A plain connection for INFO, MEMORY USAGE and seeding. */
  redis!: Redis;
  readonly prefix = `bench-${randomUUID().slice(0, 8)}`;
  readonly rawPrefix = `bench-raw-${randomUUID().slice(0, 8)}`;
  api!: ApiHandle;
  /** Api replicas beyond the first (the replicas workload), on the same Redis and prefix. */
  readonly extraApis: ApiHandle[] = [];
  readonly workers: Child[] = [];
  readonly rawWorkers: Record<RawQueue, Child[]> = { noop: [], primes: [], idle: [], bare: [] };
  /** The bare-HTTP baseline: raw BullMQ behind a node:http JSON-RPC endpoint (bare-api.ts), workers on queue bare. */
  bareApi!: ApiHandle;
  /** The peer: the official SDK's in-memory task runtime in one process (sdk-peer.ts). */
  sdkPeer!: ApiHandle;
  /** One client per concurrent stream of requests, as `clients`, for the bare endpoint and the SDK peer. */
  bareClients: BenchClient[] = [];
  sdkClients: BenchClient[] = [];
  agent!: Agent;
  /** One MCP client (own session) per concurrent stream of requests. */
  clients: BenchClient[] = [];
  /** Our tool queue, read to see when it is drained. */
  /** The queues of the tools the workloads call (one queue per tool: docs/catalog.md). */
  ourQueues: Queue<ToolJobData>[] = [];
  rawQueues!: Record<'noop' | 'primes' | 'idle', Queue<RawJobData>>;
  rawEvents!: Record<'noop' | 'primes', QueueEvents>;
  #workerIndex = 0;

  constructor(
    readonly options: Readonly<BenchOptions>,
    readonly progress: Progress,
  ) {}

  get keys(): KeySpace {
    return new KeySpace(this.prefix);
  }

  get env(): Record<string, string> {
    return {
      REDIS_URL: this.redisServer.url,
      REDIS_PREFIX: this.prefix,
      LOG_LEVEL: this.options.logLevel,
      WORKER_CONCURRENCY: String(this.options.concurrency),
      // The bench runs the demo tools (wait, ...).
      MCPT_DEMO: '1',
      // Every bench client comes from 127.0.0.1: the per-address limit (on by default) would throttle the run.
      // A huge limit keeps the check (and its cost) without ever refusing.
      RATE_LIMIT_PER_ADDRESS: '1000000000',
      RATE_LIMIT_PER_PRINCIPAL: '1000000000',
      RATE_LIMIT_INITIALIZE_PER_ADDRESS: '1000000000',
      MAX_SESSIONS_PER_ADDRESS: '1000000000',
    };
  }

  async start(): Promise<void> {
    this.dir = runDir(this.cleanup);
    this.progress.phase('starting redis-server');
    this.redisServer = await startRedis(this.cleanup, this.dir);
    this.redis = this.cleanup.add('inspection redis', createRedis(this.redisServer.url, 'bench'), closeRedis);
    const producer = this.cleanup.add('raw producer redis', createRedis(this.redisServer.url, 'bench-raw'), closeRedis);
    for (const tool of BENCH_TOOLS) {
      const queue = new Queue<ToolJobData>(toolQueueName(tool), { connection: producer, prefix: this.prefix });
      this.ourQueues.push(this.cleanup.add(`queue of ${tool}`, queue, (q) => q.close()));
    }
    this.progress.phase('starting api, worker and raw BullMQ worker');
    const bareEnv = { REDIS_URL: this.redisServer.url, RAW_PREFIX: this.rawPrefix, RAW_QUEUE: RawQueue.Bare };
    const [api, bareApi, sdkPeer] = await Promise.all([
      startApi(this.cleanup, this.dir, this.env),
      startEndpoint(this.cleanup, this.dir, 'bare-api', 'scripts/bench/bare-api.ts', bareEnv),
      startEndpoint(this.cleanup, this.dir, 'sdk-peer', 'scripts/bench/sdk-peer.ts', {}),
      this.setWorkers(1),
      this.setRawWorkers(RawQueue.Noop, 1),
      this.setRawWorkers(RawQueue.Bare, 1),
    ]);
    this.api = api;
    this.bareApi = bareApi;
    this.sdkPeer = sdkPeer;
    this.agent = this.cleanup.add('http agent', benchAgent(this.options.clients), (agent) => agent.destroy());
    const connectAll = (url: string) =>
      Promise.all(
        Array.from({ length: this.options.clients }, () => BenchClient.connect(url, this.agent, this.options.jsonOnly)),
      );
    this.clients = await connectAll(this.api.url);
    this.bareClients = await connectAll(this.bareApi.url);
    this.sdkClients = await connectAll(this.sdkPeer.url);

    const queue = (name: RawQueue) =>
      this.cleanup.add(
        `raw queue ${name}`,
        new Queue<RawJobData>(name, { connection: producer, prefix: this.rawPrefix }),
        (q) => q.close(),
      );
    this.rawQueues = { noop: queue(RawQueue.Noop), primes: queue(RawQueue.Primes), idle: queue(RawQueue.Idle) };
    // Every concurrent job.waitUntilFinished listens on its queue.
    for (const q of Object.values(this.rawQueues)) q.setMaxListeners(this.options.clients + 10);
    const events = (name: RawQueue) => {
      // QueueEvents blocks on its connection: it gets one of its own, closed after it.
      const connection = this.cleanup.add(
        `raw queue events ${name} redis`,
        createRedis(this.redisServer.url, 'bench-raw-events'),
        closeRedis,
      );
      return this.cleanup.add(
        `raw queue events ${name}`,
        new QueueEvents(name, { connection, prefix: this.rawPrefix }),
        (e) => e.close(),
      );
    };
    this.rawEvents = { noop: events(RawQueue.Noop), primes: events(RawQueue.Primes) };
    await Promise.all(Object.values(this.rawEvents).map((e) => e.waitUntilReady()));
  }

  /** One more MCP client with a session of its own. */
  newClient(): Promise<BenchClient> {
    return BenchClient.connect(this.api.url, this.agent, this.options.jsonOnly);
  }

  /** Starts or stops api replicas until `count` run (the first is never stopped). */
  async setApis(count: number): Promise<void> {
    const starting: Promise<ApiHandle>[] = [];
    while (1 + this.extraApis.length + starting.length < count) {
      starting.push(startApi(this.cleanup, this.dir, this.env, 1 + this.extraApis.length + starting.length));
    }
    this.extraApis.push(...(await Promise.all(starting)));
    const surplus = this.extraApis.splice(Math.max(0, count - 1));
    await Promise.all(surplus.map((api) => api.stop()));
  }

  /** Every api replica running. */
  get apis(): ApiHandle[] {
    return [this.api, ...this.extraApis];
  }

  /** Starts or stops our worker processes until `count` run. */
  /** Starts or stops workers until `count` run; `surplus: 'kill'` kills the ones too many, as crashes do. */
  async setWorkers(count: number, surplus: 'stop' | 'kill' = 'stop'): Promise<void> {
    const starting: Promise<Child>[] = [];
    // A worker is ready once BullMQ lists it among the workers of every queue the workloads use.
    const expected = count;
    const ready = async () =>
      (await Promise.all(this.ourQueues.map((queue) => queue.getWorkersCount()))).every((n) => n >= expected);
    while (this.workers.length + starting.length < count) {
      starting.push(startWorker(this.cleanup, this.dir, this.env, this.#workerIndex++, ready));
    }
    this.workers.push(...(await Promise.all(starting)));
    const extra = this.workers.splice(count);
    await Promise.all(extra.map((worker) => (surplus === 'kill' ? worker.kill() : worker.stop())));
  }

  async setRawWorkers(queue: RawQueue, count: number): Promise<void> {
    const list = this.rawWorkers[queue];
    const starting: Promise<Child>[] = [];
    while (list.length + starting.length < count) {
      const index = list.length + starting.length;
      const spec = {
        redisUrl: this.redisServer.url,
        prefix: this.rawPrefix,
        queue,
        concurrency: this.options.concurrency,
      };
      starting.push(startRawWorker(this.cleanup, this.dir, spec, index));
    }
    list.push(...(await Promise.all(starting)));
    const surplus = list.splice(count);
    await Promise.all(surplus.map((worker) => worker.stop()));
  }

  /** Waits until our queue holds no waiting or active job (e.g. tasks created while no worker ran). */
  async drainOurQueue(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const counts = await Promise.all(
        this.ourQueues.map((queue) => queue.getJobCounts('active', 'wait', 'prioritized', 'delayed')),
      );
      const left = counts.flatMap((count) => Object.values(count)).reduce((a, b) => a + b, 0);
      if (left === 0) return;
      if (Date.now() > deadline) throw new Error(`our queue still holds ${left} jobs after ${timeoutMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Every process of the system under test, for CPU accounting. */
  processes(): {
    api: Child;
    workers: Child[];
    rawWorkers: Child[];
    bareApi: Child;
    bareWorkers: Child[];
    sdkPeer: Child;
  } {
    return {
      api: this.api,
      workers: [...this.workers],
      rawWorkers: [...this.rawWorkers.noop, ...this.rawWorkers.primes],
      bareApi: this.bareApi,
      bareWorkers: [...this.rawWorkers.bare],
      sdkPeer: this.sdkPeer,
    };
  }

  /** The last log lines of our processes, for a failed run's error message (the run's temp dir goes away). */
  logTails(lines = 15): string {
    const children = [this.api as Child | undefined, ...this.workers].filter((child) => child !== undefined);
    return children.map((child) => `--- ${child.name} (${child.logFile}):\n${logTail(child, lines)}`).join('\n');
  }

  stop(): Promise<void> {
    return this.cleanup.releaseAll((step, error) => console.error(`bench: stopping ${step} failed: ${String(error)}`));
  }
}
