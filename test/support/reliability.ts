// Reliability scenarios (issue #5): each one breaks something on purpose — kills a worker or an api replica,
// restarts Redis, floods or fuzzes the endpoint — and then checks every task it created: exactly one terminal
// status, the expected one, and tasks/result answering exactly what the tool produced. The same functions run at CI
// size from test/integration/reliability.test.ts and at long size from scripts/reliability.ts.
import { isDeepStrictEqual } from 'node:util';
import { readFileSync } from 'node:fs';
import { RELATED_TASK_META_KEY } from '@mcp-tasks/protocol';
import { McpTestClient, RpcError, sleep, type RpcReply } from './mcp-client.ts';
import { spawnApi, startSystem, type ApiHandle, type ChildHandle, type System } from './processes.ts';
import { rawRequest, type RawRequest } from './raw-http.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';
import { openTaskResultStream } from './sse-client.ts';

// ---------------------------------------------------------------------------------------------------------------
// The rig: one redis-server with AOF (everysec), api replicas and workers, with short lock and sweep timings.

export const RIG_ENV: Record<string, string> = {
  WORKER_CONCURRENCY: '4',
  // A killed worker's jobs come back after about 2-3 s instead of 30 s.
  WORKER_LOCK_DURATION_MS: '2000',
  WORKER_STALLED_INTERVAL_MS: '1000',
  WORKER_SHUTDOWN_GRACE_MS: '2000',
  CANCEL_CHECK_INTERVAL_MS: '500',
  MAINTENANCE_INTERVAL_MS: '200',
  RESULT_RECHECK_MS: '1000',
  TASK_TTL_MAX_MS: '600000',
  TASK_TTL_DEFAULT_MS: '120000',
  // The flood's hostile sessions come from addresses of their own (X-Forwarded-For, the test as the proxy).
  TRUST_PROXY: 'loopback',
  // The defaults, spelled out because the flood checks what they let through.
  RATE_LIMIT_WINDOW_MS: '10000',
  RATE_LIMIT_INITIALIZE_PER_ADDRESS: '200',
  MAX_SESSIONS_PER_ADDRESS: '1000',
};

export interface Rig {
  redisServer: RedisServer;
  system: System;
  /** Every worker ever started, the killed ones included (their logs stay readable). */
  allWorkers: ChildHandle[];
  allApis: ApiHandle[];
  liveWorkers(): ChildHandle[];
  liveApis(): ApiHandle[];
  /** `env`: this worker's own settings over the rig's (e.g. WORKER_CONCURRENCY). */
  addWorker(env?: Record<string, string>): Promise<ChildHandle>;
  addApi(): Promise<ApiHandle>;
  stop(): Promise<void>;
}

const alive = (child: ChildHandle) => child.process.exitCode === null && child.process.signalCode === null;

export async function startRig(options: { apis: number; workers: number; env?: Record<string, string> }): Promise<Rig> {
  const redisServer = await startRedisServer({ aof: true });
  let system: System;
  try {
    system = await startSystem({
      redisUrl: redisServer.url,
      apis: options.apis,
      workers: Math.min(1, options.workers),
      env: { ...RIG_ENV, ...options.env },
    });
    // The other workers in a second wave: a 2-core machine starts a few processes at a time much faster.
    for (let i = 1; i < options.workers; i++) await system.addWorker();
  } catch (error) {
    await redisServer.stop();
    throw error;
  }
  // The inspection connection sees the restarts too; its errors are expected then.
  system.redis.on('error', () => undefined);
  const allWorkers = [...system.workers];
  const allApis = [...system.apis];
  return {
    redisServer,
    system,
    allWorkers,
    allApis,
    liveWorkers: () => allWorkers.filter(alive),
    liveApis: () => allApis.filter(alive),
    async addWorker(env = {}) {
      const worker = await system.addWorker(env);
      allWorkers.push(worker);
      return worker;
    },
    async addApi() {
      const api = await spawnApi(system.env);
      system.apis.push(api);
      allApis.push(api);
      return api;
    },
    async stop() {
      await system.stop();
      await redisServer.stop();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Reports.

export interface ScenarioReport {
  scenario: string;
  created: number;
  verified: number;
  failures: string[];
  seconds: number;
  /** Figures worth printing (throughput, memory, ...). */
  figures: Record<string, string | number>;
}

class Report {
  readonly failures: string[] = [];
  readonly figures: Record<string, string | number> = {};
  created = 0;
  verified = 0;
  readonly #started = Date.now();

  constructor(readonly scenario: string) {}

  fail(message: string): void {
    // Enough to diagnose; a flood of identical failures would drown the summary.
    if (this.failures.length < 50) this.failures.push(message);
  }

  done(): ScenarioReport {
    return {
      scenario: this.scenario,
      created: this.created,
      verified: this.verified,
      failures: this.failures,
      seconds: Math.round((Date.now() - this.#started) / 100) / 10,
      figures: this.figures,
    };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Expected outcomes, derived from what each demo tool does.

export type Expectation =
  | { status: 'completed' | 'failed'; result: Record<string, unknown> }
  | { status: 'failed'; error: { code: number; message: string; data?: unknown } }
  | { status: 'cancelled' };

export function expectedOutcome(tool: string, args: Record<string, unknown>): Expectation {
  switch (tool) {
    case 'wait':
      return args['fail']
        ? {
            status: 'failed',
            result: {
              content: [{ type: 'text', text: `Failed on purpose after ${String(args['seconds'])}s` }],
              isError: true,
            },
          }
        : { status: 'completed', result: { content: [{ type: 'text', text: `Waited ${String(args['seconds'])}s` }] } };
    case 'crash':
      return {
        status: 'failed',
        error: { code: -32603, message: `Tool 'crash' failed: ${String(args['message'])}`, data: { tool: 'crash' } },
      };
    case 'once':
      return {
        status: 'completed',
        result: { content: [{ type: 'text', text: `Done once: ${String(args['ref'])}` }] },
      };
    default:
      throw new Error(`no expectation for tool ${tool}`);
  }
}

/** A `once` task whose worker died under it: failed, and never run a second time. */
export const ONCE_INTERRUPTED: Expectation = {
  status: 'failed',
  error: { code: -32603, message: "Tool 'once' was interrupted and is not retry-safe", data: { tool: 'once' } },
};

interface Entry {
  taskId: string;
  sessionId: string;
  tool: string;
  expect: Expectation;
}

/** The tasks a scenario created and what each must end as. */
class Ledger {
  readonly entries = new Map<string, Entry>();

  add(client: McpTestClient, taskId: string, tool: string, expect: Expectation): Entry {
    const entry = { taskId, sessionId: String(client.sessionId), tool, expect };
    this.entries.set(taskId, entry);
    return entry;
  }
}

async function create(
  ledger: Ledger,
  report: Report,
  client: McpTestClient,
  tool: string,
  args: Record<string, unknown>,
  task: Record<string, unknown> = {},
): Promise<string> {
  const created = await client.createTask(tool, args, task);
  const taskId = String(created['taskId']);
  ledger.add(client, taskId, tool, expectedOutcome(tool, args));
  report.created++;
  return taskId;
}

/** A client of the same session through a replica that is alive now. */
function via(rig: Rig, sessionId: string, index = 0): McpTestClient {
  const apis = rig.liveApis();
  const api = apis[index % apis.length];
  if (!api) throw new Error('no live api replica');
  const client = new McpTestClient(api.url);
  client.sessionId = sessionId;
  return client;
}

/** Runs `work` over `items` with at most `lanes` at once. */
async function inLanes<T>(items: readonly T[], lanes: number, work: (item: T, index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index] as T, index);
      }
    }),
  );
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Checks one task against its expectation; returns what is wrong, or undefined. */
async function checkTask(rig: Rig, client: McpTestClient, entry: Entry): Promise<string | undefined> {
  const { taskId, expect } = entry;
  // tasks/result first: it blocks until the task is terminal (bounded here, so a stuck task is a failure).
  const reply = await client.rpc(
    'tasks/result',
    { taskId },
    { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(60_000) },
  );
  const got = await client.rpc('tasks/get', { taskId });
  const status = got.result?.['status'];
  if (status !== expect.status) {
    return `${entry.tool} ${taskId}: status ${JSON.stringify(status ?? got.error)} (${String(got.result?.['statusMessage'])}), expected ${expect.status}`;
  }
  const problem = compareResult(entry, reply);
  if (problem) return problem;
  // Exactly one terminal status in the record's history: nothing moved it after it ended.
  const history = JSON.parse(
    (await rig.system.redis.hget(`${rig.system.prefix}:task:${taskId}`, 'history')) ?? '[]',
  ) as [number, string, string][];
  const terminals = history.filter(([, s]) => TERMINAL.has(s));
  if (terminals.length !== 1) return `${entry.tool} ${taskId}: ${terminals.length} terminal entries in its history`;
  return undefined;
}

function compareResult(entry: Entry, reply: RpcReply): string | undefined {
  const { taskId, expect } = entry;
  const meta = { [RELATED_TASK_META_KEY]: { taskId } };
  const label = `${entry.tool} ${taskId}`;
  if (expect.status === 'cancelled') {
    return reply.error?.code === -32800
      ? undefined
      : `${label}: tasks/result ${JSON.stringify(reply)}, expected -32800`;
  }
  if ('result' in expect) {
    const { _meta, ...rest } = reply.result ?? {};
    if (!reply.result || !isDeepStrictEqual(rest, expect.result) || !isDeepStrictEqual(_meta, meta)) {
      return `${label}: tasks/result ${JSON.stringify(reply)}, expected result ${JSON.stringify(expect.result)}`;
    }
    return undefined;
  }
  const error = reply.error;
  const { _meta, ...data } = (error?.data ?? {}) as Record<string, unknown>;
  if (
    !error ||
    error.code !== expect.error.code ||
    error.message !== expect.error.message ||
    !isDeepStrictEqual(_meta, meta) ||
    (expect.error.data !== undefined && !isDeepStrictEqual(data, expect.error.data))
  ) {
    return `${label}: tasks/result ${JSON.stringify(reply)}, expected error ${JSON.stringify(expect.error)}`;
  }
  return undefined;
}

/** Verifies every task of the ledger, and that each session lists each of its tasks exactly once. */
async function verifyLedger(rig: Rig, ledger: Ledger, report: Report, lanes = 8): Promise<void> {
  const entries = [...ledger.entries.values()];
  await inLanes(entries, lanes, async (entry, i) => {
    try {
      const problem = await checkTask(rig, via(rig, entry.sessionId, i), entry);
      if (problem) report.fail(problem);
      else report.verified++;
    } catch (error) {
      report.fail(`${entry.tool} ${entry.taskId}: ${String(error)}`);
    }
  });
  const sessions = new Map<string, Set<string>>();
  for (const entry of entries) {
    const ids = sessions.get(entry.sessionId) ?? new Set<string>();
    ids.add(entry.taskId);
    sessions.set(entry.sessionId, ids);
  }
  for (const [sessionId, ids] of sessions) {
    const listed = await listAll(via(rig, sessionId));
    const seen = new Map<string, number>();
    for (const id of listed) seen.set(id, (seen.get(id) ?? 0) + 1);
    for (const id of ids) if (seen.get(id) !== 1) report.fail(`${id}: listed ${seen.get(id) ?? 0} times`);
    for (const id of seen.keys()) if (!ids.has(id)) report.fail(`${id}: listed but never created by this scenario`);
  }
}

async function listAll(client: McpTestClient): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call('tasks/list', cursor ? { cursor } : {});
    ids.push(...(page['tasks'] as { taskId: string }[]).map((task) => task.taskId));
    cursor = page['nextCursor'] as string | undefined;
  } while (cursor);
  return ids;
}

async function waitUntilTerminal(rig: Rig, ledger: Ledger, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(ledger.entries.keys());
  while (pending.size > 0 && Date.now() < deadline) {
    const ids = [...pending];
    const statuses = await Promise.all(
      ids.map((id) => rig.system.redis.hget(`${rig.system.prefix}:task:${id}`, 'status')),
    );
    ids.forEach((id, i) => {
      if (TERMINAL.has(String(statuses[i]))) pending.delete(id);
    });
    if (pending.size > 0) await sleep(200);
  }
}

/** The worker name in "Running on <worker>." */
/**
 * The worker each task runs on (from "Running on <worker>."), as first seen; a task that ended before it was
 * seen running has no entry. Resolves once every task was seen running or has ended.
 */
async function runnersOf(
  client: McpTestClient,
  ids: readonly string[],
  timeoutMs = 30_000,
): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  const runners = new Map<string, string>();
  const ended = new Set<string>();
  for (;;) {
    const pending = ids.filter((id) => !runners.has(id) && !ended.has(id));
    if (pending.length === 0) return runners;
    if (Date.now() > deadline) {
      throw new Error(
        `${pending.length} of ${ids.length} tasks not started within ${timeoutMs} ms: ${pending.join(', ')}`,
      );
    }
    const tasks = await Promise.all(pending.map((taskId) => client.call('tasks/get', { taskId })));
    tasks.forEach((task, i) => {
      const id = pending[i] as string;
      const runner = /^Running on (\S+)\.$/.exec(String(task['statusMessage']))?.[1];
      if (runner) runners.set(id, runner);
      else if (TERMINAL.has(String(task['status']))) ended.add(id);
    });
    await sleep(100);
  }
}

const workerByName = (rig: Rig, name: string) =>
  rig.allWorkers.find((worker) => name.endsWith(`-${String(worker.process.pid)}`));

function logRecords(children: readonly ChildHandle[], match: (record: Record<string, unknown>) => boolean) {
  return children.flatMap((child) => child.records().filter(match));
}

/** Log lines no scenario should produce: errors and unhandled rejections or exceptions. */
function badLogLines(children: readonly ChildHandle[], since: Map<ChildHandle, number>): string[] {
  return children.flatMap((child) =>
    child.logs
      .slice(since.get(child) ?? 0)
      .filter((line) => /"level":"error"|unhandled|uncaught/i.test(line))
      .map((line) => `${child.name}: ${line.slice(0, 300)}`),
  );
}

function logMarks(rig: Rig): Map<ChildHandle, number> {
  return new Map([...rig.allApis, ...rig.allWorkers].map((child) => [child, child.logs.length]));
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Workers killed with SIGKILL mid-tool.

export async function workerCrash(rig: Rig, options: { rounds: number; waits: number; onces: number }) {
  const report = new Report('worker SIGKILL mid-tool');
  const ledger = new Ledger();
  const client = await McpTestClient.connect(via(rig, '').url);
  for (let round = 0; round < options.rounds; round++) {
    if (rig.liveWorkers().length < 2) await rig.addWorker();
    const waits: string[] = [];
    const onces: string[] = [];
    for (let i = 0; i < options.onces; i++) {
      onces.push(await create(ledger, report, client, 'once', { ref: `r${round}-${i}`, seconds: 5 }));
    }
    for (let i = 0; i < options.waits; i++) waits.push(await create(ledger, report, client, 'wait', { seconds: 5 }));
    const runners = await runnersOf(client, [...onces, ...waits]);
    // The victim is the worker of the first `once`, so each round has a non-retry-safe tool to interrupt.
    const victimName = String(onces.map((id) => runners.get(id)).find(Boolean));
    const victim = workerByName(rig, victimName);
    if (!victim) throw new Error(`no worker named ${victimName}`);
    await victim.stop('SIGKILL');
    // Interrupted: the `once` tasks of the victim that had not ended when it died (nothing can end them since).
    for (const id of onces) {
      const status = await rig.system.redis.hget(`${rig.system.prefix}:task:${id}`, 'status');
      if (runners.get(id) === victimName && !TERMINAL.has(String(status))) {
        (ledger.entries.get(id) as Entry).expect = ONCE_INTERRUPTED;
      }
    }
    report.figures[`round ${round + 1} interrupted`] = [...runners.values()].filter((n) => n === victimName).length;
    await waitUntilTerminal(rig, ledger, 30_000);
  }
  await verifyLedger(rig, ledger, report);
  // The non-retry-safe tool ran at most once per task, on whichever worker.
  for (const entry of ledger.entries.values()) {
    if (entry.tool !== 'once') continue;
    const runs = logRecords(
      rig.allWorkers,
      (r) => r['taskId'] === entry.taskId && r['message'] === 'side effect started',
    );
    if (runs.length !== 1) report.fail(`once ${entry.taskId}: its side effect ran ${runs.length} times`);
  }
  return report.done();
}

// ---------------------------------------------------------------------------------------------------------------
// 2. An api replica killed with SIGKILL under clients waiting in tasks/result (JSON and SSE).

export async function apiCrash(rig: Rig, options: { rounds: number; clients: number }) {
  const report = new Report('api replica SIGKILL under tasks/result');
  const ledger = new Ledger();
  for (let round = 0; round < options.rounds; round++) {
    if (rig.liveApis().length < 2) await rig.addApi();
    const [victim] = rig.liveApis() as [ApiHandle];
    const clients = await Promise.all(Array.from({ length: options.clients }, () => McpTestClient.connect(victim.url)));
    const ids = await Promise.all(
      clients.map((c, i) => create(ledger, report, c, 'wait', { seconds: 3 + (i % 3) * 0.5 })),
    );
    // SSE waiters first: their streams are open (answer headers received) before the replica dies.
    const streams = await Promise.all(
      clients.map((client, i) =>
        i % 2 === 0 ? Promise.resolve(undefined) : openTaskResultStream(client, ids[i] as string, 1),
      ),
    );
    const waiting = clients.map(async (client, i) => {
      const stream = streams[i];
      if (!stream) {
        const reply = await client
          .rpc('tasks/result', { taskId: ids[i] }, { headers: { accept: 'application/json' } })
          .catch(() => undefined);
        return reply ? 'answered' : 'cut off';
      }
      await stream.finished(15_000).catch(() => undefined);
      await stream.close();
      return stream.events.some((event) => 'result' in event.message) ? 'answered' : 'cut off';
    });
    await sleep(400);
    await victim.stop('SIGKILL');
    const outcomes = await Promise.all(waiting);
    report.figures[`round ${round + 1} cut off`] = outcomes.filter((o) => o === 'cut off').length;
    // The clients retry on a surviving replica; verifyLedger does exactly that (JSON), as a client would.
  }
  await waitUntilTerminal(rig, ledger, 30_000);
  await verifyLedger(rig, ledger, report);
  // Settled exactly once each (no task run twice because a replica died).
  for (const entry of ledger.entries.values()) {
    const settled = logRecords(rig.allWorkers, (r) => r['taskId'] === entry.taskId && r['message'] === 'task settled');
    if (settled.length !== 1) report.fail(`${entry.taskId}: settled ${settled.length} times`);
  }
  return report.done();
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Redis restarted (SIGTERM, then SIGKILL) with tasks finished, running and queued.

export async function redisRestart(rig: Rig, options: { signal: 'SIGTERM' | 'SIGKILL'; queuedPerSlot: number }) {
  const report = new Report(`Redis ${options.signal} + restart (AOF everysec)`);
  const ledger = new Ledger();
  const marks = logMarks(rig);
  const client = await McpTestClient.connect(via(rig, '').url);
  const finished: string[] = [];
  for (let i = 0; i < 3; i++) finished.push(await create(ledger, report, client, 'wait', { seconds: 0 }));
  finished.push(await create(ledger, report, client, 'crash', { message: `before ${options.signal}` }));
  for (const id of finished)
    await client.rpc('tasks/result', { taskId: id }, { headers: { accept: 'application/json' } });
  const slots = rig.liveWorkers().length * Number(RIG_ENV['WORKER_CONCURRENCY']);
  const running: string[] = [];
  for (let i = 0; i < slots; i++) running.push(await create(ledger, report, client, 'wait', { seconds: 2 }));
  for (let i = 0; i < slots * options.queuedPerSlot; i++) {
    await create(ledger, report, client, 'wait', {
      seconds: i % 2 === 0 ? 0.5 : 0,
      ...(i % 5 === 0 ? { fail: true } : {}),
    });
  }
  const acknowledged = Date.now();
  await runnersOf(client, running.slice(0, 2));
  if (options.signal === 'SIGKILL') {
    // appendfsync everysec: what was acknowledged more than ~1 s before the kill is on disk (Redis may delay an
    // fsync up to 2 s when the disk is slow, hence the margin).
    await sleep(Math.max(0, acknowledged + 2000 - Date.now()));
  }
  const down = Date.now();
  await rig.redisServer.restart(options.signal);
  report.figures['redis down (ms)'] = Date.now() - down;
  await waitUntilTerminal(rig, ledger, 60_000);
  await verifyLedger(rig, ledger, report);
  // A new task after the restart runs too (api and workers reconnected by themselves).
  const after = await create(ledger, report, client, 'wait', { seconds: 0 });
  const reply = await client.rpc('tasks/result', { taskId: after }, { headers: { accept: 'application/json' } });
  if (!reply.result) report.fail(`a task created after the restart: ${JSON.stringify(reply)}`);
  else report.verified++;
  for (const line of badLogLines([...rig.allApis, ...rig.allWorkers], marks)) report.fail(line);
  return report.done();
}

// ---------------------------------------------------------------------------------------------------------------
// 4. Graceful shutdown: SIGTERM lets active tools finish within WORKER_SHUTDOWN_GRACE_MS, hands back the others.

export async function gracefulShutdown(rig: Rig, options: { short: number; long: number }) {
  const report = new Report('worker SIGTERM (graceful)');
  const ledger = new Ledger();
  const graceMs = Number(RIG_ENV['WORKER_SHUTDOWN_GRACE_MS']);
  // Every task must run on the worker that is stopped: which worker BullMQ hands a job to is chance, and with other
  // workers beside it CI once saw no long task on the victim, so nothing to hand back. The other workers leave
  // first (idle, so at once); the victim has a slot for each task; whoever takes what it hands back starts later.
  const idleCodes = await Promise.all(rig.liveWorkers().map((worker) => worker.stop('SIGTERM', graceMs + 10_000)));
  for (const code of idleCodes) if (code !== 0) report.fail(`an idle worker exited with ${String(code)}`);
  const victim = await rig.addWorker({ WORKER_CONCURRENCY: String(options.short + options.long + 1) });
  const client = await McpTestClient.connect(via(rig, '').url);
  const shorts: string[] = [];
  const longs: string[] = [];
  // Shorts end well within the grace period; longs and the `once` well after it, however slow the start.
  for (let i = 0; i < options.short; i++) shorts.push(await create(ledger, report, client, 'wait', { seconds: 1 }));
  for (let i = 0; i < options.long; i++) longs.push(await create(ledger, report, client, 'wait', { seconds: 6 }));
  const once = await create(ledger, report, client, 'once', { ref: 'graceful', seconds: 6 });
  const runners = await runnersOf(client, [...shorts, ...longs, once]);
  for (const [id, runner] of runners) {
    if (workerByName(rig, runner) !== victim) report.fail(`${id} ran on ${runner}, not on the worker to be stopped`);
  }
  // Handed back after the grace period: a `once` cannot run again, so it fails saying why.
  (ledger.entries.get(once) as Entry).expect = ONCE_INTERRUPTED;
  const stopping = Date.now();
  const code = await victim.stop('SIGTERM', graceMs + 10_000);
  const tookMs = Date.now() - stopping;
  report.figures['shutdown (ms)'] = tookMs;
  if (code !== 0) report.fail(`the worker exited with ${String(code)}`);
  if (tookMs > graceMs + 3000) report.fail(`the worker took ${tookMs} ms to stop (grace ${graceMs} ms)`);
  await rig.addWorker();
  await waitUntilTerminal(rig, ledger, 30_000);
  await verifyLedger(rig, ledger, report);
  for (const id of shorts) {
    // Finished within the grace period by the worker that was stopping, not handed back.
    const settled = logRecords([victim], (r) => r['taskId'] === id && r['message'] === 'task settled');
    if (settled.length !== 1) report.fail(`short task ${id} was not finished by the stopping worker`);
  }
  const handedBack = logRecords([victim], (r) => r['message'] === 'handing the task back on shutdown').map((r) =>
    String(r['taskId']),
  );
  report.figures['handed back'] = handedBack.length;
  if (handedBack.sort().join() !== [...longs].sort().join()) {
    report.fail(`handed back ${JSON.stringify(handedBack)}, expected the long tasks ${JSON.stringify(longs)}`);
  }
  return report.done();
}

// ---------------------------------------------------------------------------------------------------------------
// 5. Cancellation racing completion.

export async function cancelRaces(rig: Rig, options: { iterations: number; lanes: number; seed: number }) {
  const report = new Report('cancel racing completion');
  const ledger = new Ledger();
  const random = prng(options.seed);
  const marks = logMarks(rig);
  const clients = await Promise.all(
    Array.from({ length: options.lanes }, (_, i) => McpTestClient.connect(via(rig, '', i).url)),
  );
  const plan = Array.from({ length: options.iterations }, () => ({
    seconds: Math.floor(random() * 4) / 10,
    delayMs: Math.floor(random() * 500),
    doubleCancel: random() < 0.3,
  }));
  let cancelledWins = 0;
  await inLanes(plan, options.lanes, async (step, i) => {
    const client = clients[i % clients.length] as McpTestClient;
    const taskId = await create(ledger, report, client, 'wait', { seconds: step.seconds });
    await sleep(step.delayMs);
    const cancels = await Promise.all(
      Array.from({ length: step.doubleCancel ? 2 : 1 }, () => client.rpc('tasks/cancel', { taskId })),
    );
    const wins = cancels.filter((reply) => reply.result?.['status'] === 'cancelled');
    for (const reply of cancels) {
      if (reply.result && reply.result['status'] !== 'cancelled') {
        report.fail(`${taskId}: cancel answered ${JSON.stringify(reply.result)}`);
      }
      const message = reply.error?.message ?? '';
      if (
        reply.error &&
        !(
          reply.error.code === -32602 &&
          /^Cannot cancel task: already in terminal status '(completed|cancelled)'$/.test(message)
        )
      ) {
        report.fail(`${taskId}: cancel leaked ${JSON.stringify(reply.error)}`);
      }
    }
    if (wins.length > 1) report.fail(`${taskId}: ${wins.length} cancels won`);
    if (wins.length > 0) {
      cancelledWins++;
      (ledger.entries.get(taskId) as Entry).expect = { status: 'cancelled' };
    }
  });
  report.figures['cancel won'] = cancelledWins;
  report.figures['completion won'] = options.iterations - cancelledWins;
  // Long enough for any tool that was still running to have tried to settle.
  await sleep(1000);
  await verifyLedger(rig, ledger, report);
  for (const line of badLogLines([...rig.allApis, ...rig.allWorkers], marks)) report.fail(line);
  return report.done();
}

// ---------------------------------------------------------------------------------------------------------------
// 6. ttl expiry: tasks in every status disappear on time with their results and events.

export async function ttlExpiry(rig: Rig, options: { perStatus: number }) {
  const report = new Report('ttl expiry in every status');
  // Long enough to create every task and see it reach its status; short enough to wait for.
  const ttl = Math.max(3000, options.perStatus * 1200);
  const { redis, prefix } = rig.system;
  const client = new McpTestClient(via(rig, '').url);
  await client.initialize('2025-11-25', { elicitation: { form: {} } });
  const ids: { taskId: string; status: string }[] = [];
  const add = async (status: string, tool: string, args: Record<string, unknown>) => {
    const created = await client.createTask(tool, args, { ttl });
    ids.push({ taskId: String(created['taskId']), status });
    report.created++;
  };
  for (let i = 0; i < options.perStatus; i++) {
    await add('completed', 'wait', { seconds: 0 });
    await add('failed', 'wait', { seconds: 0, fail: true });
    await add('failed', 'crash', { message: 'expired crash' });
    await add('cancelled', 'wait', { seconds: 30 });
    await add('working', 'wait', { seconds: 30 });
    await add('input_required', 'ask_user', { question: 'Still there?' });
  }
  for (const { taskId, status } of ids) {
    if (status === 'cancelled') await client.call('tasks/cancel', { taskId });
  }
  // Every task reached its status within its ttl.
  const deadline = Date.now() + ttl - 500;
  const reached = new Set<string>();
  while (reached.size < ids.length && Date.now() < deadline) {
    for (const { taskId, status } of ids) {
      if (reached.has(taskId)) continue;
      const task = (await client.rpc('tasks/get', { taskId })).result ?? {};
      if (task['status'] === status) reached.add(taskId);
    }
  }
  for (const { taskId, status } of ids) if (!reached.has(taskId)) report.fail(`${taskId} never reached ${status}`);
  // A little after the ttl (maintenance runs every 200 ms), nothing of them is left.
  await sleep(ttl + 1000);
  const keys = await scanKeys(redis, `${prefix}:*`);
  const leftovers = new Map<string, string[]>();
  for (const { taskId } of ids) leftovers.set(taskId, []);
  for (const key of keys) {
    for (const { taskId } of ids) if (key.includes(taskId)) leftovers.get(taskId)?.push(`key ${key}`);
  }
  // Members of sorted sets and hashes, and entries of streams, that name the task (session-scoped keys included).
  for (const key of keys) {
    const type = await redis.type(key);
    let content = '';
    if (type === 'zset') content = ((await redis.call('ZRANGE', key, '0', '-1')) as string[]).join('\n');
    else if (type === 'hash') content = JSON.stringify(await redis.hgetall(key));
    else if (type === 'list') content = (await redis.lrange(key, 0, -1)).join('\n');
    else if (type === 'set') content = (await redis.smembers(key)).join('\n');
    else if (type === 'stream') content = JSON.stringify(await redis.xrange(key, '-', '+'));
    else if (type === 'string') content = String(await redis.get(key));
    if (isEventLog(prefix, key)) continue; // BullMQ's capped event logs (ids only, trimmed by BullMQ).
    for (const { taskId } of ids) if (content.includes(taskId)) leftovers.get(taskId)?.push(`${type} ${key}`);
  }
  for (const { taskId, status } of ids) {
    const left = leftovers.get(taskId) ?? [];
    if (left.length > 0) report.fail(`${status} task ${taskId} left in Redis: ${left.join(', ')}`);
    const got = await politely(() => client.rpc('tasks/get', { taskId }));
    const result = await politely(() =>
      client.rpc('tasks/result', { taskId }, { headers: { accept: 'application/json' } }),
    );
    if (got.error?.code !== -32602 || result.error?.code !== -32602) {
      report.fail(`${status} task ${taskId}: get ${JSON.stringify(got)} result ${JSON.stringify(result)}`);
    } else if (left.length === 0) report.verified++;
  }
  const listed = await listAll(client);
  if (listed.length > 0) report.fail(`tasks/list still lists ${listed.length} expired tasks`);
  // The running tools were stopped (T-TTL-1), not left to run to their end.
  for (const { taskId, status } of ids) {
    if (status !== 'working') continue;
    const stopped = logRecords(rig.allWorkers, (r) => r['taskId'] === taskId && r['message'] === 'tool stopped');
    if (stopped.length === 0) report.fail(`the tool of expired task ${taskId} was not stopped`);
  }
  return report.done();
}

/**
 * Retries a request the documented lookup limit (-32029, RATE_LIMIT_FAILED_LOOKUPS) refused, after the wait it
 * names: many lookups of expired ids in a row are exactly what that limit counts.
 */
async function politely(request: () => Promise<RpcReply>): Promise<RpcReply> {
  for (let attempt = 0; ; attempt++) {
    const reply = await request();
    if (reply.error?.code !== -32029 || attempt >= 5) return reply;
    const data = reply.error.data as { retryAfterMs?: number } | undefined;
    await sleep((data?.retryAfterMs ?? 1000) + 50);
  }
}

async function scanKeys(redis: System['redis'], pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

// ---------------------------------------------------------------------------------------------------------------
// 7. Flood: many task-augmented calls from concurrent clients over every replica, while hostile clients open
// sessions as fast as they can with megabyte-sized capabilities.

/** Hostile sessions during the flood: `perAddress` initialize calls from each of `addresses` addresses. */
export interface HostileSessions {
  addresses: number;
  perAddress: number;
  /** Padding in each one's capabilities and clientInfo, in characters. */
  capabilityBytes: number;
}

export async function flood(
  rig: Rig,
  options: { tasks: number; clients: number; seed: number; hostile: HostileSessions },
) {
  const report = new Report(
    `flood (${options.tasks} tasks, ${options.clients} clients; ` +
      `${options.hostile.addresses * options.hostile.perAddress} hostile initialize)`,
  );
  const ttl = 8000;
  const random = prng(options.seed);
  const { redis, prefix } = rig.system;
  const memory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);
  const rss = () => [...rig.liveApis(), ...rig.liveWorkers()].reduce((sum, child) => sum + rssOf(child), 0);
  const baseKeys = new Set(await scanKeys(redis, `${prefix}:*`));
  const baseMemory = await memory();
  const baseRss = rss();
  const clients = await Promise.all(
    Array.from({ length: options.clients }, (_, i) => McpTestClient.connect(via(rig, '', i).url)),
  );
  const plan = Array.from({ length: options.tasks }, (_, i) => {
    const pick = random();
    if (pick < 0.6) return { tool: 'wait', args: { seconds: 0 } };
    if (pick < 0.75) return { tool: 'wait', args: { seconds: 0.1, fail: true } };
    if (pick < 0.9) return { tool: 'crash', args: { message: `flood ${i}` } };
    return { tool: 'once', args: { ref: `flood-${i}` } };
  });
  const limited = { count: 0 };
  const started = Date.now();
  let lastCreated = 0;
  const hostile = hostileSessions(rig, options.hostile, report);
  await inLanes(plan, options.clients, async (step, i) => {
    const client = clients[i % clients.length] as McpTestClient;
    let taskId: string | undefined;
    for (let attempt = 0; taskId === undefined; attempt++) {
      try {
        const created = await client.createTask(step.tool, step.args, { ttl });
        taskId = String(created['taskId']);
      } catch (error) {
        // A documented limit (-32029) is an answer, not a failure: back off and try again.
        if (error instanceof RpcError && error.code === -32029 && attempt < 20) {
          limited.count++;
          await sleep(100 * (attempt + 1));
          continue;
        }
        report.fail(`create ${step.tool}: ${String(error)}`);
        return;
      }
    }
    lastCreated = Date.now();
    report.created++;
    const entry: Entry = {
      taskId,
      sessionId: String(client.sessionId),
      tool: step.tool,
      expect: expectedOutcome(step.tool, step.args),
    };
    try {
      const problem = await checkTask(rig, client, entry);
      if (problem) report.fail(problem);
      else report.verified++;
    } catch (error) {
      report.fail(`${step.tool} ${taskId}: ${String(error)}`);
    }
  });
  const seconds = (Date.now() - started) / 1000;
  report.figures['tasks/s (create+result+check)'] = Math.round(options.tasks / seconds);
  report.figures['limit errors (-32029)'] = limited.count;
  const attack = await hostile;
  // Honest clients are still served once the hostile addresses are refused: a new session, a task, its result.
  const late = await McpTestClient.connect(via(rig, '').url);
  try {
    const problem = await checkTask(rig, late, {
      taskId: String((await late.createTask('wait', { seconds: 0 }, { ttl }))['taskId']),
      sessionId: String(late.sessionId),
      tool: 'wait',
      expect: expectedOutcome('wait', { seconds: 0 }),
    });
    if (problem) report.fail(`honest client after the hostile sessions: ${problem}`);
  } catch (error) {
    report.fail(`honest client after the hostile sessions: ${String(error)}`);
  }
  lastCreated = Date.now();
  const peakMemory = await memory();
  const peakRss = rss();
  await checkHostileSessions(rig, attack, report);
  await Promise.all([...clients, late].map((client) => client.terminate()));
  // After the ttl (and the session streams' idle expiry) everything the flood wrote is gone again.
  await sleep(Math.max(0, lastCreated + ttl + 1500 - Date.now()));
  // Session-scoped keys (the event stream that held the flood's notifications, its calls hash) expire
  // SESSION_IDLE_TTL_MS after the session's last event, not with the tasks: counted apart.
  const sessionIds = new Set([...clients, late].map((client) => String(client.sessionId)));
  const keys = await scanKeys(redis, `${prefix}:*`);
  const sessionScoped = keys.filter((key) => [...sessionIds].some((id) => key.includes(id)));
  // Rate-limit windows (per address, principal, session) expire on their own after two windows.
  const limiterWindows = keys.filter((key) => key.startsWith(`${prefix}:rate:`));
  // The dashboard's per-minute figures (docs/observability.md) expire an hour after their minute: three keys per
  // minute, whatever the number of tasks.
  const figures = keys.filter((key) => key.startsWith(`${prefix}:activity:`));
  const minutes = new Set(figures.map((key) => key.split(':')[2]));
  // A tool's fair-order hash (docs/scheduling.md) is one per tool, not per task: its expiry is set a minute past
  // the tasks it orders and moved only when a later task would outlive it, so it may outlast them by that minute.
  const fairOrders = keys.filter((key) => key.startsWith(`${prefix}:sched:fair:`));
  for (const key of fairOrders) {
    const left = await redis.pttl(key);
    if (left < 0 || left > 60_000) report.fail(`${key} expires in ${left} ms, not within a minute of its tasks`);
  }
  if (figures.length > 3 * minutes.size) report.fail(`more than 3 figure keys per minute: ${figures.length}`);
  // The look for jobs of gone workers (docs/reliability.md, "A worker dies") holds a lease per tool queue for half an
  // interval at a time: one key per queue, not per task.
  const lostJobsLeases = keys.filter((key) => /^lost-jobs:[^:]+$/.test(key.slice(prefix.length + 1)));
  const extra = keys.filter(
    (key) =>
      !baseKeys.has(key) &&
      // One hash of a few counters, created by the first refusal (the hostile sessions'), kept for monitoring.
      key !== `${prefix}:security-counters` &&
      // Likewise the scheduling counters (retries, timeouts, held jobs per tool), for operators.
      key !== `${prefix}:sched:counters` &&
      !sessionScoped.includes(key) &&
      !limiterWindows.includes(key) &&
      !figures.includes(key) &&
      !fairOrders.includes(key) &&
      !lostJobsLeases.includes(key) &&
      !BULLMQ_QUEUE_KEY.test(key.slice(prefix.length + 1)),
  );
  report.figures['session-scoped keys left'] = sessionScoped.length;
  report.figures['rate-limit windows left'] = limiterWindows.length;
  report.figures['dashboard figure keys'] = figures.length;
  if (extra.length > 0) report.fail(`keys left after ttl: ${extra.slice(0, 10).join(', ')} (${extra.length})`);
  for (const key of ['live', 'expiries', 'all-tasks']) {
    const count = await redis.zcard(`${prefix}:${key}`);
    if (count > 0) report.fail(`${prefix}:${key} still has ${count} members after ttl`);
  }
  const afterMemory = await memory();
  let eventsLog = 0;
  for (const key of await scanKeys(redis, `${prefix}:*:events`)) {
    if (isEventLog(prefix, key)) eventsLog += Number((await redis.call('MEMORY', 'USAGE', key)) ?? 0);
  }
  const kb = (n: number) => `${Math.round(n / 1024)} KiB`;
  report.figures['redis used_memory base/peak/after'] = `${kb(baseMemory)}/${kb(peakMemory)}/${kb(afterMemory)}`;
  report.figures['bullmq events log'] = kb(eventsLog);
  report.figures['processes RSS base/peak/after'] = `${kb(baseRss)}/${kb(peakRss)}/${kb(rss())}`;
  // What stays is BullMQ's capped event log (about 10k entries) and allocator slack, not tasks.
  if (afterMemory - baseMemory > eventsLog + 2 * 1024 * 1024) {
    report.fail(`Redis memory did not come back: ${kb(baseMemory)} -> ${kb(afterMemory)}`);
  }
  return report.done();
}

interface HostileOutcome {
  /** Session ids accepted, by address. */
  accepted: Map<string, string[]>;
  startedAt: number;
  endedAt: number;
}

/**
 * Sends the hostile initialize calls, `perAddress` from each address on two lanes each, and sorts the answers:
 * a session, or -32029 (rate limit or session cap). Anything else is a failure.
 */
async function hostileSessions(rig: Rig, options: HostileSessions, report: Report): Promise<HostileOutcome> {
  const accepted = new Map<string, string[]>();
  const refused = new Map<string, number>();
  // Spread over a used capability, an unused one, a nested used one and clientInfo: each must be cut away.
  const padding = (share: number) => 'x'.repeat(Math.floor(options.capabilityBytes * share));
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {
        elicitation: { form: {}, padding: padding(0.4) },
        experimental: { padding: padding(0.3) },
        tasks: { requests: { elicitation: { create: { padding: padding(0.2) } } } },
      },
      clientInfo: { name: padding(0.1), version: '1' },
    },
  });
  const startedAt = Date.now();
  const attempts = Array.from({ length: options.addresses * options.perAddress }, (_, i) => i % options.addresses);
  await inLanes(attempts, options.addresses * 2, async (index, i) => {
    const address = `198.51.100.${index + 1}`;
    const client = via(rig, '', i);
    client.headers = { 'x-forwarded-for': address };
    try {
      const reply = await client.post(body);
      const json = reply.json as RpcReply | undefined;
      const sessionId = reply.headers.get('mcp-session-id');
      if (reply.status === 200 && json?.result && sessionId) {
        accepted.set(address, [...(accepted.get(address) ?? []), sessionId]);
        return;
      }
      const limit = (json?.error?.data as { limit?: string } | undefined)?.limit;
      if (json?.error?.code === -32029 && (limit === 'initialize-address' || limit === 'sessions_per_address')) {
        refused.set(limit, (refused.get(limit) ?? 0) + 1);
        return;
      }
      report.fail(`hostile initialize from ${address}: HTTP ${reply.status} ${reply.text.slice(0, 200)}`);
    } catch (error) {
      report.fail(`hostile initialize from ${address}: ${String(error)}`);
    }
  });
  const count = [...accepted.values()].reduce((sum, ids) => sum + ids.length, 0);
  report.figures['hostile initialize sent/accepted'] = `${attempts.length}/${count}`;
  report.figures['hostile refused (rate/cap)'] =
    `${refused.get('initialize-address') ?? 0}/${refused.get('sessions_per_address') ?? 0}`;
  report.figures['hostile bytes sent'] = `${Math.round((attempts.length * body.length) / 1024 / 1024)} MiB`;
  return { accepted, startedAt, endedAt: Date.now() };
}

/**
 * What the hostile sessions hold in Redis: each about a kilobyte whatever it sent, no address more sessions than
 * its initialize rate and its cap let through; then ends them (DELETE), which must leave none of their keys.
 */
async function checkHostileSessions(rig: Rig, attack: HostileOutcome, report: Report): Promise<void> {
  const { redis, prefix, env } = rig.system;
  const windowMs = Number(env['RATE_LIMIT_WINDOW_MS']);
  const windows = Math.ceil((attack.endedAt - attack.startedAt) / windowMs) + 1;
  const allowed = Math.min(
    Number(env['MAX_SESSIONS_PER_ADDRESS']),
    windows * Number(env['RATE_LIMIT_INITIALIZE_PER_ADDRESS']),
  );
  let stored = 0;
  let largest = 0;
  for (const [address, ids] of attack.accepted) {
    if (ids.length > allowed) report.fail(`${address}: ${ids.length} hostile sessions, at most ${allowed} allowed`);
    const counted = await redis.zcard(`${prefix}:address-sessions:${address}`);
    if (counted !== ids.length) report.fail(`${address}: ${counted} sessions counted, ${ids.length} created`);
    const pipeline = redis.pipeline();
    for (const id of ids) pipeline.call('MEMORY', 'USAGE', `${prefix}:session:${id}`);
    for (const [, bytes] of (await pipeline.exec()) ?? []) {
      stored += Number(bytes);
      largest = Math.max(largest, Number(bytes));
    }
    stored += Number((await redis.call('MEMORY', 'USAGE', `${prefix}:address-sessions:${address}`)) ?? 0);
  }
  report.figures['hostile sessions in Redis'] = `${Math.round(stored / 1024)} KiB (largest session ${largest} B)`;
  if (largest > 2048) report.fail(`a hostile session holds ${largest} bytes of Redis`);
  for (const [address, ids] of attack.accepted) {
    await inLanes(ids, 8, async (id) => {
      const reply = await rawRequest(via(rig, '').url, {
        method: 'DELETE',
        headers: { 'mcp-session-id': id, 'x-forwarded-for': address },
      });
      if (reply.status !== 204) report.fail(`DELETE of hostile session ${id}: HTTP ${reply.status}`);
    });
    if ((await redis.exists(`${prefix}:address-sessions:${address}`)) !== 0) {
      report.fail(`${address}: its live-session set outlived its sessions`);
    }
  }
}

/**
 * BullMQ's own keys of a tool queue that outlive jobs (meta, id counter, event log, markers): each tool's queue
 * (docs/catalog.md), and the shared queue of earlier versions.
 */
const BULLMQ_QUEUE_KEY =
  /^(tools|tool-[^:]+):(meta|id|events|marker|stalled-check|stalled|wait|active|paused|delayed|prioritized|completed|failed|pc|limiter|de)$/;

function rssOf(child: ChildHandle): number {
  try {
    const status = readFileSync(`/proc/${String(child.process.pid)}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 8. Fuzz: generated malformed or hostile messages at the endpoint.

export async function fuzz(rig: Rig, options: { cases: number; seed: number; lanes: number }) {
  const report = new Report(`fuzz (${options.cases} messages, seed ${options.seed})`);
  const marks = logMarks(rig);
  const random = prng(options.seed);
  const client = await McpTestClient.connect(via(rig, '').url);
  const cases = Array.from({ length: options.cases }, (_, i) => fuzzCase(random, i, String(client.sessionId)));
  const statuses = new Map<number, number>();
  await inLanes(cases, options.lanes, async (fuzzed, i) => {
    const api = rig.liveApis()[i % rig.liveApis().length] as ApiHandle;
    const label = `case ${i} (seed ${options.seed}): ${fuzzed.describe}`;
    let reply;
    try {
      reply = await withTimeout(rawRequest(api.url, fuzzed.request), 10_000);
    } catch (error) {
      report.fail(`${label}: ${String(error)}`);
      return;
    }
    report.created++;
    statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    const problem = judgeFuzzReply(reply.status, reply.headers, reply.text, reply.json);
    if (problem) report.fail(`${label}: ${problem}`);
    else report.verified++;
  });
  report.figures['HTTP statuses'] = [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  // Fuzzed task calls may have started long waits: stop them so they do not hold worker slots.
  for (const taskId of await listAll(client)) await client.rpc('tasks/cancel', { taskId });
  for (const api of rig.liveApis()) {
    const probe = await McpTestClient.connect(api.url)
      .then((c) => c.call('ping'))
      .catch((e: unknown) => e);
    if (!isDeepStrictEqual(probe, {})) report.fail(`${api.name} does not answer ping after the fuzz: ${String(probe)}`);
  }
  for (const line of badLogLines(rig.allApis, marks)) report.fail(line);
  return report.done();
}

const ALLOWED_STATUSES = new Set([200, 202, 400, 403, 404, 405, 406, 413, 415]);

function judgeFuzzReply(
  status: number,
  headers: Record<string, unknown>,
  text: string,
  json: unknown,
): string | undefined {
  if (!ALLOWED_STATUSES.has(status)) return `HTTP ${status}: ${text.slice(0, 200)}`;
  if (status === 202) return text === '' ? undefined : `202 with a body: ${text.slice(0, 200)}`;
  const type = typeof headers['content-type'] === 'string' ? headers['content-type'] : '';
  if (status === 405 && text === '') return undefined;
  if (!type.startsWith('application/json') && !type.startsWith('text/event-stream')) {
    return `HTTP ${status} with content-type '${type}': ${text.slice(0, 200)}`;
  }
  const message = json as Record<string, unknown> | undefined;
  if (!message || message['jsonrpc'] !== '2.0') return `HTTP ${status}, not a JSON-RPC message: ${text.slice(0, 200)}`;
  const error = message['error'] as { code?: unknown; message?: unknown } | undefined;
  if (status !== 200 && !error) return `HTTP ${status} without a JSON-RPC error: ${text.slice(0, 200)}`;
  if (error) {
    if (!Number.isInteger(error.code) || typeof error.message !== 'string')
      return `malformed error ${text.slice(0, 200)}`;
    // -32603 only as the answer of a tool that threw (a plain call of `crash`), never as the server's own failure.
    if (error.code === -32603 && !String(error.message).startsWith("Tool '")) {
      return `internal error answered: ${text.slice(0, 300)}`;
    }
  } else if (!('result' in message)) return `neither result nor error: ${text.slice(0, 200)}`;
  return undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** mulberry32: small, fast and seeded, so a failing case can be replayed from its seed. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface FuzzCase {
  describe: string;
  request: RawRequest;
}

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'notifications/initialized',
  'notifications/cancelled',
  'resources/list',
  'prompts/get',
  '',
  'tasks/',
  'rpc.discover',
  '__proto__',
  'constructor',
  'tools/call\u0000',
];
const TOOLS = ['wait', 'crash', 'echo', 'count_primes', 'once', 'ask_user', 'nope', '', '../wait', 'WAIT'];

function fuzzCase(random: () => number, index: number, sessionId: string): FuzzCase {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const headers: Record<string, string> = {
    host: '127.0.0.1',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  };
  const kind = pick(['value', 'rpc', 'rpc', 'rpc', 'batch', 'bytes', 'headers'] as const);
  let body: string | Buffer;
  let describe: string = kind;
  let method = 'POST';
  if (kind === 'value') {
    body = JSON.stringify(randomValue(random, 0));
  } else if (kind === 'batch') {
    body = JSON.stringify(Array.from({ length: Math.floor(random() * 4) }, () => rpcMessage(random, index)));
  } else if (kind === 'bytes') {
    const base = Buffer.from(JSON.stringify(rpcMessage(random, index)));
    const variant = pick(['utf8', 'truncate', 'nul', 'bom', 'nest', 'garbage'] as const);
    describe = `bytes/${variant}`;
    if (variant === 'utf8')
      body = Buffer.concat([
        base.subarray(0, base.length - 2),
        Buffer.from([0xc3, 0x28, 0xff]),
        base.subarray(base.length - 2),
      ]);
    else if (variant === 'truncate') body = base.subarray(0, Math.floor(random() * base.length));
    else if (variant === 'nul') body = Buffer.concat([base, Buffer.from([0])]);
    else if (variant === 'bom') body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), base]);
    else if (variant === 'nest') {
      const depth = Math.floor(random() * 100_000);
      body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    } else body = Buffer.from(Array.from({ length: Math.floor(random() * 64) }, () => Math.floor(random() * 256)));
  } else {
    body = JSON.stringify(rpcMessage(random, index));
    if (kind === 'headers') {
      const variant = pick([
        'type',
        'accept',
        'version',
        'session',
        'nosession',
        'method',
        'encoding',
        'origin',
      ] as const);
      describe = `headers/${variant}`;
      if (variant === 'type')
        headers['content-type'] = pick([
          'text/plain',
          'application/xml',
          '',
          'application/json; charset=latin1',
          'multipart/form-data',
        ]);
      if (variant === 'accept') headers['accept'] = pick(['text/html', 'image/png', '', 'text/event-stream']);
      if (variant === 'version')
        headers['mcp-protocol-version'] = pick(['1999-01-01', '', 'x'.repeat(300), '2025-06-18']);
      if (variant === 'session') headers['mcp-session-id'] = pick(['nope', '', 'x'.repeat(5000), `${sessionId}x`]);
      if (variant === 'nosession') delete headers['mcp-session-id'];
      if (variant === 'method') {
        method = pick(['PUT', 'PATCH', 'GET', 'OPTIONS']);
        // A GET that accepts SSE opens the session's stream, which rightly stays open: ask for JSON only (406).
        if (method === 'GET') headers['accept'] = pick(['application/json', 'text/html']);
      }
      if (variant === 'encoding') headers['content-encoding'] = pick(['gzip', 'br', 'deflate', 'x-unknown']);
      if (variant === 'origin') headers['origin'] = pick(['http://evil.example', 'null', 'http://127.0.0.1:1']);
    }
  }
  if (typeof body === 'string') describe += ` ${body.slice(0, 160)}`;
  return { describe, request: { method, headers, body: method === 'GET' || method === 'DELETE' ? undefined : body } };
}

function rpcMessage(random: () => number, index: number): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const message: Record<string, unknown> = { jsonrpc: '2.0', id: `fuzz-${index}`, method: pick(METHODS) };
  if (message['method'] === 'tools/call') {
    const name = pick(TOOLS);
    const args =
      random() < 0.5
        ? randomValue(random, 1)
        : {
            seconds: pick([0, -1, 1e308, 'x', null, 0.01]),
            message: 'x',
            text: 'x',
            ref: 'x',
            below: pick([10, -5, 1e20]),
          };
    // A plain call of a valid long tool would block for as long as it asks; fuzzing wants answers, so add a task.
    const task =
      random() < 0.8 || name === 'wait' || name === 'once'
        ? { ttl: pick([1000, -1, 1e300, 'x', null, 60_000]) }
        : undefined;
    message['params'] = { name, arguments: args, ...(task ? { task } : {}) };
  } else if (random() < 0.7) {
    message['params'] =
      random() < 0.5 ? { taskId: randomValue(random, 2), cursor: randomValue(random, 2) } : randomValue(random, 0);
  }
  // Mutations of the envelope.
  if (random() < 0.15) message['jsonrpc'] = pick(['1.0', 2, null, '', '2.0 ']);
  if (random() < 0.15)
    message['id'] = pick([null, {}, [], true, 1.5, -0, 1e300, 'x'.repeat(10_000), Number.MAX_SAFE_INTEGER + 2]);
  if (random() < 0.1) delete message['id'];
  if (random() < 0.05) delete message['method'];
  if (random() < 0.05) message['result'] = randomValue(random, 1);
  if (random() < 0.05) message['error'] = { code: pick([1, 'x', -32000]), message: pick(['m', 5]) };
  return message;
}

function randomValue(random: () => number, depth: number): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const roll = random();
  if (depth > 4 || roll < 0.4) {
    return pick([
      0,
      -1,
      1e308,
      -1e308,
      5e-324,
      Number.MAX_SAFE_INTEGER + 1,
      1.5,
      true,
      false,
      null,
      '',
      'x'.repeat(Math.floor(random() * 3000)),
      '\u0000\u202e\ud83d\ude00',
      '__proto__',
      'constructor',
      '2025-11-25',
      '00000000-0000-4000-8000-000000000000',
    ]);
  }
  if (roll < 0.7) return Array.from({ length: Math.floor(random() * 5) }, () => randomValue(random, depth + 1));
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(random() * 5); i > 0; i--) {
    object[
      pick([
        'taskId',
        'cursor',
        'name',
        'arguments',
        'task',
        'ttl',
        '_meta',
        'progressToken',
        '__proto__',
        'x',
        'params',
      ])
    ] = randomValue(random, depth + 1);
  }
  return object;
}

/** A BullMQ queue's event log: one per tool queue (docs/catalog.md), and the shared queue's of earlier versions. */
function isEventLog(prefix: string, key: string): boolean {
  if (key === `${prefix}:tools:events`) return true;
  const queue = key.startsWith(`${prefix}:tool-`) && key.endsWith(':events') ? key.slice(prefix.length + 1, -7) : '';
  return queue !== '' && !queue.includes(':');
}
