// The six workloads, each run against our system and against raw BullMQ on the same Redis, repetitions
// interleaved (ours, raw, ours, raw, ...) so that a noisy neighbour hurts both sides alike.
import { randomUUID } from 'node:crypto';
import { encodeCursor, indexMember, TaskKeys, TaskStore } from '@mcp-tasks/engine';
import type { TaskRecord } from '@mcp-tasks/protocol';
import { loadWorkerConfig } from '@mcp-tasks/worker';
import type { Job } from 'bullmq';
import { drive, type DriveResult } from './drive.ts';
import { SCALE_OUT_MAX_REPS } from './options.ts';
import type { BenchClient } from './mcp.ts';
import { commandStats, memoryUsage, redisCpuSeconds, storedPerTask, usageByKind, usedMemory } from './redis-info.ts';
import type {
  BenchResults,
  CpuPerTask,
  ReplicaPoint,
  ExpiryResult,
  ExpirySample,
  FootprintResult,
  ReadSample,
  ReadsResult,
  ScaleOutResult,
  Sides,
  ThroughputSample,
} from './results.ts';
import { counterDelta, perSecond, percentile, sum, summarizeLatency, type LatencySummary } from './stats.ts';
import { nowUs, profileSteps, type Role, type StepProfile, type Window } from './steps.ts';
import { RawQueue, type BenchSystem } from './system.ts';

const NOOP_ARGS = { seconds: 0 };
/** What `wait` with seconds 0 answers (the raw worker answers the same). */
export const NOOP_RESULT = { content: [{ type: 'text', text: 'Waited 0s' }] };

type Side = 'ours' | 'raw' | 'bare' | 'sdk';

/** The sides of the throughput and latency workloads, in the order each repetition runs them. */
const SIDES = [
  ['ours', 'ours'],
  ['bare', 'bare-HTTP BullMQ'],
  ['sdk', 'SDK peer'],
  ['raw', 'raw BullMQ'],
] as const;

/** Worker processes running during the expiry workload: each sweeps, and they share the work. */
export const EXPIRY_WORKERS = 2;
/** Tasks per session in the expiry workload: each leaves one event, well within a session stream's cap. */
const EXPIRING_PER_SESSION = 500;

export class Workloads {
  /** Names of measurements the deadline cut short. */
  readonly truncated: string[] = [];

  constructor(private readonly system: BenchSystem) {}

  private get options() {
    return this.system.options;
  }

  /** One create -> tasks/result round trip of a no-op task for `client`; `created` is called in between. */
  private async oursNoop(client: BenchClient, created: () => void = () => undefined): Promise<void> {
    const taskId = await client.createTask('wait', NOOP_ARGS);
    created();
    await client.result(taskId);
  }

  private async rawJob(
    queue: 'noop' | 'primes',
    name: string,
    args: Record<string, unknown>,
    created: () => void = () => undefined,
  ): Promise<Job> {
    const job = await this.system.rawQueues[queue].add(name, { taskId: randomUUID(), tool: name, arguments: args });
    created();
    await job.waitUntilFinished(this.system.rawEvents[queue], this.options.measureTimeoutMs + 30_000);
    return job;
  }

  private rawNoop(created?: () => void): Promise<Job> {
    return this.rawJob(RawQueue.Noop, 'wait', NOOP_ARGS, created);
  }

  private note(name: string, result: DriveResult): void {
    if (result.timedOut) this.truncated.push(name);
  }

  async warmUp(): Promise<void> {
    const { clients } = this.system;
    const count = Math.min(300, this.options.tasks);
    this.system.progress.phase('warming up (JIT, connections)');
    for (const [side] of SIDES) {
      const once = this.noopOf(side);
      await drive(count, clients.length, 30_000, (_, lane) => once(lane));
    }
    // The plain-call path too (its own code in the api), from one client as the plain-call workload sends them.
    for (const client of [clients[0], this.system.bareClients[0]] as BenchClient[]) {
      await drive(Math.min(100, count), 1, 30_000, async () => {
        await client.callTool('wait', NOOP_ARGS);
      });
    }
  }

  /**
   * One no-op task of `side` on lane `lane`: ours, the bare-HTTP endpoint and the SDK peer through the same MCP
   * client (tools/call, then tasks/result); raw BullMQ in-process (add, then wait for completion).
   */
  private noopOf(side: Side): (lane: number, created?: () => void) => Promise<void> {
    if (side === 'raw') return (_, created) => this.rawNoop(created).then(() => undefined);
    const clients =
      side === 'ours' ? this.system.clients : side === 'bare' ? this.system.bareClients : this.system.sdkClients;
    return (lane, created) => this.oursNoop(clients[lane] as BenchClient, created);
  }

  /**
   * Workload 1: N no-op tasks from C clients, each fetching its result, against ours, the bare-HTTP endpoint, the
   * SDK peer and raw BullMQ in-process, repetitions interleaved.
   */
  async throughput(): Promise<Sides<ThroughputSample>> {
    const { clients, progress } = this.system;
    const { reps, tasks, measureTimeoutMs } = this.options;
    const samples: Required<Sides<ThroughputSample>> = { ours: [], raw: [], bare: [], sdk: [] };
    for (let rep = 1; rep <= reps; rep++) {
      for (const [side, label] of SIDES) {
        progress.phase(`throughput ${rep}/${reps}: ${label}`);
        const once = this.noopOf(side);
        samples[side].push(
          await this.accounted(side, async () => {
            const result = await drive(
              tasks,
              clients.length,
              measureTimeoutMs,
              (_, lane) => once(lane),
              (done, total) => progress.tick(done, total),
            );
            this.note(`throughput ${side} #${rep}`, result);
            return result;
          }),
        );
      }
    }
    return samples;
  }

  /** Runs `body` and charges Redis commands and CPU time of every process to the tasks it finished. */
  private async accounted(side: Side, body: () => Promise<DriveResult>): Promise<ThroughputSample> {
    const { redis } = this.system;
    const processes = this.system.processes();
    const workers =
      side === 'ours'
        ? processes.workers
        : side === 'bare'
          ? processes.bareWorkers
          : side === 'raw'
            ? processes.rawWorkers
            : [];
    const api =
      side === 'ours' ? processes.api : side === 'bare' ? processes.bareApi : side === 'sdk' ? processes.sdkPeer : null;
    const cpu = () => ({
      api: api ? api.cpuSeconds() : Number.NaN,
      worker: sum(workers.map((worker) => worker.cpuSeconds())),
      client: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    });
    const commandsBefore = await commandStats(redis);
    const redisCpuBefore = await redisCpuSeconds(redis);
    const cpuBefore = cpu();
    const result = await body();
    const cpuAfter = cpu();
    const redisCpuAfter = await redisCpuSeconds(redis);
    const commands = counterDelta(commandsBefore, await commandStats(redis));
    // The INFO calls of this accounting are not the workload's.
    delete commands['info'];
    const perTaskMs = (seconds: number) => (seconds * 1000) / result.done;
    const cpuPerTask: CpuPerTask = {
      api: perTaskMs(cpuAfter.api - cpuBefore.api),
      worker: perTaskMs(cpuAfter.worker - cpuBefore.worker),
      redis: perTaskMs(redisCpuAfter - redisCpuBefore),
      client: perTaskMs(cpuAfter.client - cpuBefore.client),
    };
    return {
      tasksPerSecond: perSecond(result.done, result.elapsedMs),
      tasks: result.done,
      commandsPerTask: sum(Object.values(commands)) / result.done,
      commands,
      cpu: cpuPerTask,
    };
  }

  /** Workload 2: one client, sequential create -> tasks/result; raw: add -> waitUntilFinished. */
  async latency(): Promise<Sides<LatencySummary>> {
    const { progress } = this.system;
    const { reps, latencySamples, measureTimeoutMs } = this.options;
    const sides: Required<Sides<LatencySummary>> = { ours: [], raw: [], bare: [], sdk: [] };
    const sample = async (name: string, once: (created: () => void) => Promise<unknown>): Promise<LatencySummary> => {
      const times: number[] = [];
      const creates: number[] = [];
      const result = await drive(
        latencySamples,
        1,
        measureTimeoutMs,
        async () => {
          const started = performance.now();
          await once(() => creates.push(performance.now() - started));
          times.push(performance.now() - started);
        },
        (done, total) => progress.tick(done, total),
      );
      this.note(name, result);
      return { ...summarizeLatency(times), createP50: percentile(creates, 50) };
    };
    for (let rep = 1; rep <= reps; rep++) {
      for (const [side, label] of SIDES) {
        progress.phase(`latency ${rep}/${reps}: ${label}`);
        const once = this.noopOf(side);
        sides[side].push(await sample(`latency ${side} #${rep}`, (created) => once(0, created)));
      }
    }
    return sides;
  }

  /**
   * Plain (non-task) tools/call of the no-op tool, one client, sequential, ours and the bare-HTTP endpoint
   * alternating: what a client without Tasks sends, one request answering the result.
   */
  async plainCalls(): Promise<Sides<LatencySummary>> {
    const { progress } = this.system;
    const { reps, latencySamples, measureTimeoutMs } = this.options;
    const sides: Required<Sides<LatencySummary>> = { ours: [], raw: [], bare: [], sdk: [] };
    const clients = { ours: this.system.clients[0], bare: this.system.bareClients[0] };
    for (let rep = 1; rep <= reps; rep++) {
      for (const side of ['ours', 'bare'] as const) {
        progress.phase(`plain calls ${rep}/${reps}: ${side}`);
        const client = clients[side] as BenchClient;
        const times: number[] = [];
        const result = await drive(
          latencySamples,
          1,
          measureTimeoutMs,
          async () => {
            const started = performance.now();
            await client.callTool('wait', NOOP_ARGS);
            times.push(performance.now() - started);
          },
          (done, total) => progress.tick(done, total),
        );
        this.note(`plain calls ${side} #${rep}`, result);
        sides[side].push(summarizeLatency(times));
      }
    }
    return sides;
  }

  /**
   * Redis commands and round trips per task by step (steps.ts): sequential no-op tasks of ours, the bare-HTTP
   * endpoint and raw BullMQ in-process, each under MONITOR, split into the create request, the result request and
   * the worker's share.
   */
  async steps(): Promise<Record<'ours' | 'bare' | 'raw', StepProfile>> {
    const { progress, redis, prefix, rawPrefix } = this.system;
    const count = Math.min(100, this.options.latencySamples);
    const base64 = (name: string) => Buffer.from(name).toString('base64');
    // BullMQ names the connections it opens itself <prefix>:<base64 queue name>, and its QueueEvents' with ":qe".
    const roles: Record<'ours' | 'bare' | 'raw', (name: string) => Role | undefined> = {
      ours: (name) =>
        name.startsWith('mcpt-api')
          ? 'api'
          : name.startsWith('mcpt-worker') || name.startsWith(`${prefix}:`)
            ? 'worker'
            : undefined,
      bare: (name) =>
        name.startsWith('bench-bare-api') || name === `${rawPrefix}:${base64(RawQueue.Bare)}:qe`
          ? 'api'
          : name === `bench-raw-worker-${RawQueue.Bare}` || name.startsWith(`${rawPrefix}:${base64(RawQueue.Bare)}`)
            ? 'worker'
            : undefined,
      raw: (name) =>
        name === 'bench-raw' || name === 'bench-raw-events' || name === `${rawPrefix}:${base64(RawQueue.Noop)}:qe`
          ? 'api'
          : name === `bench-raw-worker-${RawQueue.Noop}` || name.startsWith(`${rawPrefix}:${base64(RawQueue.Noop)}`)
            ? 'worker'
            : undefined,
    };
    const profiles = {} as Record<'ours' | 'bare' | 'raw', StepProfile>;
    for (const side of ['ours', 'bare', 'raw'] as const) {
      progress.phase(`steps: ${count} sequential tasks under MONITOR, ${side}`);
      const once = this.noopOf(side);
      const create = side === 'raw' ? 'queue.add' : 'tools/call';
      const wait = side === 'raw' ? 'waitUntilFinished' : 'tasks/result';
      profiles[side] = await profileSteps(redis, roles[side], async () => {
        const windows: Window[] = [];
        for (let i = 0; i < count; i++) {
          const started = nowUs();
          let created = started;
          await once(0, () => {
            created = nowUs();
            windows.push({ step: create, fromUs: started, toUs: created });
          });
          windows.push({ step: wait, fromUs: created, toUs: nowUs() });
        }
        return { tasks: count, windows };
      });
    }
    // A plain call (no task) of ours and of the bare endpoint: one request, and the worker's share. Its steps are
    // named apart ("plain call: ...") and kept out of the tasks' total.
    for (const side of ['ours', 'bare'] as const) {
      progress.phase(`steps: ${count} sequential plain calls under MONITOR, ${side}`);
      const client = (side === 'ours' ? this.system.clients[0] : this.system.bareClients[0]) as BenchClient;
      const plain = await profileSteps(redis, roles[side], async () => {
        const windows: Window[] = [];
        for (let i = 0; i < count; i++) {
          const fromUs = nowUs();
          await client.callTool('wait', NOOP_ARGS);
          windows.push({ step: 'tools/call', fromUs, toUs: nowUs() });
        }
        return { tasks: count, windows };
      });
      for (const [step, counts] of Object.entries(plain.steps)) profiles[side].steps[`plain call: ${step}`] = counts;
    }
    return profiles;
  }

  /** Workload 3: tasks/get and tasks/list pages of one owner holding `small`, then `large` stored tasks. */
  async reads(): Promise<ReadsResult> {
    const { progress } = this.system;
    const { reps, reads, small, large, measureTimeoutMs } = this.options;
    const owners = await Promise.all([small, large].map(() => this.system.newClient()));
    const [smallOwner, largeOwner] = owners as [BenchClient, BenchClient];
    progress.phase(`reads: storing ${small} tasks`);
    const smallSet = await this.seed(smallOwner, small);
    progress.phase(`reads: storing ${large} tasks`);
    const seedStarted = performance.now();
    const largeSet = await this.seed(largeOwner, large);
    const seedSeconds = (performance.now() - seedStarted) / 1000;

    const measure = async (owner: BenchClient, set: SeededSet, name: string): Promise<ReadSample> => {
      const timed = async (operation: () => Promise<unknown>): Promise<number> => {
        const times: number[] = [];
        const result = await drive(reads, 1, measureTimeoutMs, async () => {
          const started = performance.now();
          await operation();
          times.push(performance.now() - started);
        });
        this.note(name, result);
        return percentile(times, 50);
      };
      const randomId = () => set.ids[Math.floor(Math.random() * set.ids.length)] as string;
      return {
        get: await timed(() => owner.call('tasks/get', { taskId: randomId() })),
        listFirst: await timed(() => owner.call('tasks/list', {})),
        listMiddle: await timed(() => owner.call('tasks/list', { cursor: set.middleCursor })),
      };
    };
    const atSmall: ReadSample[] = [];
    const atLarge: ReadSample[] = [];
    for (let rep = 1; rep <= reps; rep++) {
      progress.phase(`reads ${rep}/${reps}: ${small} tasks stored`);
      atSmall.push(await measure(smallOwner, smallSet, `reads at ${small} #${rep}`));
      progress.phase(`reads ${rep}/${reps}: ${large} tasks stored`);
      atLarge.push(await measure(largeOwner, largeSet, `reads at ${large} #${rep}`));
    }
    return { small, large, pageSize: 50, atSmall, atLarge, seedSeconds };
  }

  /**
   * Stores `count` finished tasks of `owner` directly through the engine's TaskStore (pipelined, much faster than
   * running them), as the api and a worker would have left them.
   */
  private async seed(owner: BenchClient, count: number): Promise<SeededSet> {
    const { progress, redis, keys } = this.system;
    const store = new TaskStore(redis, keys);
    const now = Date.now();
    const ids: string[] = [];
    const members: string[] = [];
    const batch = 1000;
    for (let start = 0; start < count; start += batch) {
      const writes: Promise<unknown>[] = [];
      for (let i = start; i < Math.min(count, start + batch); i++) {
        const taskId = randomUUID();
        const createdAt = now - count + i;
        // Cast: the record shape grows with the engine (e.g. sessionId); extra fields are harmless here.
        const record = {
          taskId,
          kind: 'task',
          status: 'completed',
          statusMessage: 'The operation completed.',
          createdAt,
          lastUpdatedAt: createdAt + 1,
          ttl: 3_600_000,
          pollInterval: 1000,
          owner: owner.owner,
          sessionId: owner.sessionId,
          tool: 'wait',
          outcome: { result: NOOP_RESULT },
        } as TaskRecord;
        ids.push(taskId);
        members.push(indexMember(createdAt, taskId));
        writes.push(store.create({ record, arguments: NOOP_ARGS }));
      }
      await Promise.all(writes);
      progress.tick(Math.min(count, start + batch), count);
    }
    // A finished task is not live (the settling transition removes it); the reconciler need not look at these.
    for (let start = 0; start < ids.length; start += batch) {
      await store.indexes.leaveLive(...ids.slice(start, start + batch));
    }
    const middle = members[Math.floor(members.length / 2)] as string;
    return { ids, middleCursor: encodeCursor(middle) };
  }

  /** Workload 4: Redis memory per finished task and per waiting task (no worker running), vs raw jobs. */
  async footprint(): Promise<FootprintResult> {
    const { progress, redis, keys, prefix, rawPrefix } = this.system;
    const { footprint: count, measureTimeoutMs } = this.options;
    // Fresh sessions: their event streams (capped per session) start empty, so what they hold shows per task.
    const clients = await Promise.all(this.system.clients.map(() => this.system.newClient()));
    const lanes = clients.length;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
    /** used_memory and MEMORY USAGE by key kind around `body`, per finished operation. */
    const measure = async (name: string, keyPrefix: string, body: () => Promise<DriveResult>) => {
      const kindsBefore = await usageByKind(redis, keyPrefix);
      const before = await usedMemory(redis);
      const result = await body();
      this.note(name, result);
      await settle();
      const perTask = ((await usedMemory(redis)) - before) / result.done;
      const kindsAfter = await usageByKind(redis, keyPrefix);
      const byKind: Record<string, number> = {};
      for (const kind of new Set([...kindsBefore.keys(), ...kindsAfter.keys()])) {
        const delta = ((kindsAfter.get(kind) ?? 0) - (kindsBefore.get(kind) ?? 0)) / result.done;
        if (Math.abs(delta) >= 1) byKind[kind.replace(keyPrefix, '')] = delta;
      }
      return { perTask, byKind };
    };

    progress.phase(`footprint: ${count} finished tasks, ours`);
    const ourIds: string[] = [];
    const oursFinished = await measure('footprint finished ours', `${prefix}:`, async () => {
      const result = await drive(count, lanes, measureTimeoutMs, async (_, lane) => {
        const client = clients[lane] as BenchClient;
        const taskId = await client.createTask('wait', NOOP_ARGS);
        ourIds.push(taskId);
        await client.result(taskId);
      });
      await this.system.drainOurQueue();
      return result;
    });
    const sampleIds = ourIds.slice(0, 200);
    const taskKeys = new TaskKeys(keys);
    const oursRecord =
      (await memoryUsage(
        redis,
        sampleIds.map((id) => taskKeys.record(id)),
      )) / sampleIds.length;

    progress.phase(`footprint: ${count} finished jobs, raw BullMQ`);
    const rawIds: string[] = [];
    const rawFinished = await measure('footprint finished raw', `${rawPrefix}:`, () =>
      drive(count, lanes, measureTimeoutMs, async () => {
        const job = await this.rawNoop();
        rawIds.push(String(job.id));
      }),
    );
    const rawSample = rawIds.slice(0, 200);
    const rawJob =
      (await memoryUsage(
        redis,
        rawSample.map((id) => `${rawPrefix}:${RawQueue.Noop}:${id}`),
      )) / rawSample.length;

    progress.phase(`footprint: ${count} waiting tasks (no worker running), ours`);
    // Killed, not stopped: a cleanly stopped worker withdraws its tools from the catalog at once, and calls of a
    // tool no worker publishes are refused; a killed one's entry stays for the grace period, so the calls queue.
    await this.system.setWorkers(0, 'kill');
    const oursWaiting = await measure('footprint waiting ours', `${prefix}:`, () =>
      drive(count, lanes, measureTimeoutMs, async (_, lane) => {
        await (clients[lane] as BenchClient).createTask('wait', NOOP_ARGS);
      }),
    );

    progress.phase(`footprint: ${count} waiting jobs, raw BullMQ`);
    const idle = this.system.rawQueues.idle;
    const rawWaiting = await measure('footprint waiting raw', `${rawPrefix}:`, () =>
      drive(count, lanes, measureTimeoutMs, async () => {
        await idle.add('wait', { taskId: randomUUID(), tool: 'wait', arguments: NOOP_ARGS });
      }),
    );
    await idle.obliterate({ force: true });

    // Leave the system as found: a worker runs the waiting tasks off.
    progress.phase('footprint: draining the waiting tasks');
    await this.system.setWorkers(1);
    await this.system.drainOurQueue();
    return {
      tasks: count,
      resultBytes: Buffer.byteLength(JSON.stringify(NOOP_RESULT)),
      finished: {
        ours: oursFinished.perTask,
        raw: rawFinished.perTask,
        oursStored: storedPerTask(oursFinished.byKind),
        rawStored: storedPerTask(rawFinished.byKind),
        oursRecord,
        rawJob,
      },
      waiting: {
        ours: oursWaiting.perTask,
        raw: rawWaiting.perTask,
        oursStored: storedPerTask(oursWaiting.byKind),
        rawStored: storedPerTask(rawWaiting.byKind),
      },
      byKind: {
        oursFinished: oursFinished.byKind,
        oursWaiting: oursWaiting.byKind,
        rawFinished: rawFinished.byKind,
        rawWaiting: rawWaiting.byKind,
      },
    };
  }

  /**
   * Workload 6: `expiry` finished tasks, each with its status event, all expiring at one instant, swept by our
   * worker processes as they run (MAINTENANCE_INTERVAL_MS and the sweep's defaults). Measures the expired tasks
   * deleted per second from the first claim to the last delete, and checks that what they held is gone again.
   */
  async expiry(): Promise<ExpiryResult> {
    const { progress, redis, keys } = this.system;
    const { reps, expiry: count, measureTimeoutMs } = this.options;
    // As the workers read it: their environment is the bench's own under the system's (processes.ts, launch).
    const intervalMs = loadWorkerConfig({ ...process.env, ...this.system.env }).MAINTENANCE_INTERVAL_MS;
    progress.phase(`expiry: starting ${EXPIRY_WORKERS} worker processes`);
    await this.system.setWorkers(EXPIRY_WORKERS);
    // Fresh sessions, so that their event streams hold only the events of these tasks.
    const owners = await Promise.all(
      Array.from({ length: Math.ceil(count / EXPIRING_PER_SESSION) }, () => this.system.newClient()),
    );
    const expiries = new TaskKeys(keys).expiries();
    const samples: ExpirySample[] = [];
    // The tasks expire once all are stored, so that no sweep starts before: the time to store them is planned from
    // the last repetition's pace (2,000 tasks/s before the first, which a busy machine of 2 cores exceeds), with half
    // of it again as a margin, and 2 s besides: a loaded machine stored the bench test's toy-size tasks slower than
    // the first guess allows, which marked the run truncated.
    let storedPerMs = 2;
    for (let rep = 1; rep <= reps; rep++) {
      const before = await this.taskKeyspace(owners);
      progress.phase(`expiry ${rep}/${reps}: storing ${count} tasks that expire at once`);
      const seedStarted = Date.now();
      const expiresAt = seedStarted + 2_000 + Math.ceil((1.5 * count) / storedPerMs);
      await this.seedExpiring(owners, count, expiresAt);
      const seedEnded = Date.now();
      storedPerMs = count / Math.max(1, seedEnded - seedStarted);
      // A sweep may have begun before the last task was stored: its figure is then low, and the run says so.
      if (seedEnded >= expiresAt) this.truncated.push(`expiry #${rep} (stored after they expired)`);
      progress.phase(`expiry ${rep}/${reps}: waiting for the workers to sweep them`);
      const deadline = expiresAt + intervalMs + measureTimeoutMs;
      // The sweep's time runs from the last poll that found no task claimed to the first that finds all deleted: an
      // upper bound, so that the rate is a lower bound whatever the polling interval.
      let beforeClaims = Number.NaN;
      let claimed = false;
      let left = count;
      let end = Number.NaN;
      for (;;) {
        const sent = performance.now();
        const replies = (await redis.pipeline().zcount(expiries, '-inf', expiresAt).zcard(expiries).exec()) ?? [];
        end = performance.now();
        const [unclaimed, total] = replies.map(([, value]) => Number(value)) as [number, number];
        // A claim re-scores its entries beyond the expiry; the last delete brings the set back to its size before.
        if (unclaimed < count) claimed = true;
        else if (!claimed) beforeClaims = sent;
        left = total - before.expiries;
        if (left <= 0) break;
        if (Date.now() > deadline) {
          this.truncated.push(`expiry #${rep}`);
          break;
        }
        if (claimed) progress.tick(count - left, count);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const sweptAt = Date.now();
      const after = await this.taskKeyspace(owners);
      const leftovers: Record<string, number> = {};
      for (const [name, value] of Object.entries(after)) {
        const grown = value - (before[name] ?? 0);
        if (grown !== 0) leftovers[name] = grown;
      }
      samples.push({
        tasksPerSecond: perSecond(count - Math.max(0, left), end - beforeClaims),
        secondsFromExpiry: (sweptAt - expiresAt) / 1000,
        leftovers,
      });
    }
    await this.system.setWorkers(1);
    return { tasks: count, workers: EXPIRY_WORKERS, intervalMs, samples };
  }

  /**
   * Stores `count` tasks of `owners` through the engine's TaskStore, pipelined, as the api and a worker would have
   * left them: created `working`, then completed (the transition writes the status event to the session's
   * stream), all expiring at `expiresAt`.
   */
  private async seedExpiring(owners: readonly BenchClient[], count: number, expiresAt: number): Promise<void> {
    const { progress, redis, keys } = this.system;
    const store = new TaskStore(redis, keys);
    const batch = 1000;
    for (let start = 0; start < count; start += batch) {
      const writes: Promise<unknown>[] = [];
      for (let i = start; i < Math.min(count, start + batch); i++) {
        const owner = owners[i % owners.length] as BenchClient;
        const createdAt = Date.now();
        const record: TaskRecord = {
          taskId: randomUUID(),
          kind: 'task',
          status: 'working',
          createdAt,
          lastUpdatedAt: createdAt,
          ttl: expiresAt - createdAt,
          pollInterval: 1000,
          owner: owner.owner,
          sessionId: owner.sessionId,
          tool: 'wait',
        };
        writes.push(
          store
            .create({ record, arguments: NOOP_ARGS })
            .then(() => store.transition(record, 'completed', { outcome: { result: NOOP_RESULT } })),
        );
      }
      await Promise.all(writes);
      progress.tick(Math.min(count, start + batch), count);
    }
  }

  /** What tasks occupy: records, index entries, and the event entries and owner sets of `owners`. */
  private async taskKeyspace(owners: readonly BenchClient[]): Promise<Record<string, number> & { expiries: number }> {
    const { redis, keys, prefix } = this.system;
    const tasks = new TaskKeys(keys);
    let records = 0;
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', tasks.record('*'), 'COUNT', 5000);
      cursor = next;
      records += found.length;
    } while (cursor !== '0');
    const counts = {
      [`${tasks.record('*').slice(prefix.length + 1)} keys`]: records,
      expiries: await redis.zcard(tasks.expiries()),
      'all-tasks': await redis.zcard(tasks.allTasks()),
      live: await redis.zcard(tasks.live()),
      "owners' index entries": 0,
      "owners' unfinished": 0,
      "sessions' events": 0,
    };
    for (const owner of owners) {
      counts["owners' index entries"] += await redis.zcard(tasks.ownerIndex(owner.owner));
      counts["owners' unfinished"] += await redis.zcard(tasks.ownerLive(owner.owner));
      counts["sessions' events"] += await redis.xlen(keys.sessionEvents(owner.sessionId));
    }
    return counts;
  }

  /**
   * Api replicas and worker processes from 1 to 4 (no-op tasks, the clients spread over the replicas), with the
   * CPU each role spends per task: on a machine of few cores, what saturates first is the bottleneck.
   */
  async replicas(): Promise<NonNullable<BenchResults['replicas']>> {
    const { progress, clients, redis } = this.system;
    const { tasks, measureTimeoutMs } = this.options;
    const reps = Math.min(this.options.reps, SCALE_OUT_MAX_REPS);
    const shapes = this.options.replicas;
    const points: ReplicaPoint[] = [];
    for (const [apis, workers] of shapes) {
      progress.phase(`replicas: starting ${apis} api replicas and ${workers} worker processes`);
      await Promise.all([this.system.setApis(apis), this.system.setWorkers(workers)]);
      const urls = this.system.apis.map((api) => api.url);
      const lanes = clients.map((client, i) => client.via(urls[i % urls.length] as string));
      await drive(Math.min(300, tasks), lanes.length, measureTimeoutMs, (_, lane) =>
        this.oursNoop(lanes[lane] as BenchClient),
      );
      const point: ReplicaPoint = { apis, workers, tasksPerSecond: [], cpu: [] };
      for (let rep = 1; rep <= reps; rep++) {
        progress.phase(`replicas ${rep}/${reps}: ${apis} api, ${workers} workers`);
        const apiCpu = () => sum(this.system.apis.map((api) => api.cpuSeconds()));
        const workerCpu = () => sum(this.system.workers.map((worker) => worker.cpuSeconds()));
        const before = { api: apiCpu(), worker: workerCpu(), redis: await redisCpuSeconds(redis) };
        const client = process.cpuUsage();
        const result = await drive(
          tasks,
          lanes.length,
          measureTimeoutMs,
          (_, lane) => this.oursNoop(lanes[lane] as BenchClient),
          (done, total) => progress.tick(done, total),
        );
        this.note(`replicas ${apis}x${workers} #${rep}`, result);
        const used = process.cpuUsage(client);
        const perTask = (seconds: number) => (seconds * 1000) / result.done;
        point.tasksPerSecond.push(perSecond(result.done, result.elapsedMs));
        point.cpu.push({
          api: perTask(apiCpu() - before.api),
          worker: perTask(workerCpu() - before.worker),
          redis: perTask((await redisCpuSeconds(redis)) - before.redis),
          client: perTask((used.user + used.system) / 1e6),
        });
      }
      points.push(point);
    }
    await Promise.all([this.system.setApis(1), this.system.setWorkers(1)]);
    return { tasks, points };
  }

  /** Workload 5: count_primes tasks with 1, 2, 4 ... worker processes, ours and raw. */
  async scaleOut(): Promise<ScaleOutResult> {
    const { progress, clients } = this.system;
    const { primesBelow, primesTasks, workers, measureTimeoutMs } = this.options;
    const reps = Math.min(this.options.reps, SCALE_OUT_MAX_REPS);
    const args = { below: primesBelow };
    const oursOnce = async (client: BenchClient) => {
      await client.result(await client.createTask('count_primes', args));
    };
    const rawOnce = () => this.rawJob(RawQueue.Primes, 'count_primes', args).then(() => undefined);
    const lanes = clients.length;
    const points: ScaleOutResult['points'] = [];
    for (const count of workers) {
      progress.phase(`scale-out: starting ${count} worker processes of each kind`);
      await Promise.all([this.system.setWorkers(count), this.system.setRawWorkers(RawQueue.Primes, count)]);
      await this.system.drainOurQueue();
      // Fresh processes: let the sieve get compiled before timing.
      const warm = Math.min(primesTasks, 4 * count);
      await drive(warm, lanes, measureTimeoutMs, (_, lane) => oursOnce(clients[lane] as BenchClient));
      await drive(warm, lanes, measureTimeoutMs, rawOnce);
      const point = { workers: count, ours: [] as number[], raw: [] as number[] };
      for (let rep = 1; rep <= reps; rep++) {
        progress.phase(`scale-out ${rep}/${reps}: ${count} workers, ours`);
        let result = await drive(
          primesTasks,
          lanes,
          measureTimeoutMs,
          (_, lane) => oursOnce(clients[lane] as BenchClient),
          (done, total) => progress.tick(done, total),
        );
        this.note(`scale-out ${count} ours #${rep}`, result);
        point.ours.push(perSecond(result.done, result.elapsedMs));
        progress.phase(`scale-out ${rep}/${reps}: ${count} workers, raw BullMQ`);
        result = await drive(primesTasks, lanes, measureTimeoutMs, rawOnce, (done, total) =>
          progress.tick(done, total),
        );
        this.note(`scale-out ${count} raw #${rep}`, result);
        point.raw.push(perSecond(result.done, result.elapsedMs));
      }
      points.push(point);
    }
    await Promise.all([this.system.setWorkers(1), this.system.setRawWorkers(RawQueue.Primes, 0)]);
    return { primesBelow, tasks: primesTasks, points };
  }
}

interface SeededSet {
  ids: string[];
  /** A tasks/list cursor pointing at the middle of the owner's tasks. */
  middleCursor: string;
}
