// Recovery in seconds with real worker processes (docs/reliability.md, "A worker dies"): a worker SIGKILLed mid-tool
// has its task continued by another worker within 15 s at the default settings (locks of 30 s), the task says which
// attempt was lost with which worker while it waits, and its history lists each attempt; a busy worker whose event
// loop is held keeps its task, and a worker that shuts down hands its task back to a run that knows it resumes.
import { expect } from 'chai';
import { runCli } from '@mcp-tasks/cli';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { modernResult, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type ChildHandle, type System } from '../support/processes.ts';

const TOOLS = './test/fixtures/recovery/tools.ts';
/** What a task says while a run of `worker` goes on (the "Running on <worker>." note). */
const RUNNING = /^Running on (\S+)\.$/;
const lostMessage = (attempt: number, worker: string) =>
  `Attempt ${attempt} was lost: ${worker} stopped without finishing it (killed, out of memory, or cut off from ` +
  'Redis). The task waits for another worker.';

/** The worker process whose name ("worker-<host>-<pid>") a status message names. */
function workerNamed(system: System, name: string): ChildHandle {
  const found = system.workers.find((worker) => name.endsWith(`-${String(worker.process.pid)}`));
  if (!found) throw new Error(`no worker process named ${name}`);
  return found;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** One principal on both wires, so that a task created on one is read on the other. */
const API_KEY = 'recovery-0123456789abcdef';

describe('recovery in seconds: a SIGKILLed worker’s tasks continue elsewhere (real workers, default timing)', function () {
  this.timeout(120_000);
  let system: System;
  let store: TaskStore;
  let client: McpTestClient;
  /** The worker that survives every kill, started after the others took their tasks. */
  let survivor: ChildHandle;
  /** The tasks the survivor runs after the first test (one per slot). */
  let continuedIds: string[] = [];

  before(async () => {
    // Three workers that each take one task (concurrency 1) and are killed; the default WORKER_LIVENESS_CHECK_MS
    // (5 s) and WORKER_LOCK_DURATION_MS (30 s).
    system = await startSystem({
      apis: 1,
      workers: 3,
      env: { MCPT_TOOLS: TOOLS, WORKER_CONCURRENCY: '1', AUTH_API_KEYS: `recovery:${API_KEY}` },
    });
    store = new TaskStore(system.redis, new KeySpace(system.prefix));
    client = new McpTestClient(system.apiUrl);
    client.headers = { authorization: `Bearer ${API_KEY}` };
    await client.initialize();
  });
  after(async () => {
    await system?.stop();
  });

  const read = (taskId: string) => client.call('tasks/get', { taskId });

  async function runningOn(taskId: string): Promise<string> {
    return eventually(async () => RUNNING.exec(String((await read(taskId))['statusMessage']))?.[1], 10_000);
  }

  it('three workers SIGKILLed mid-tool one after the other: each task runs again on another worker within 15 s, and its history names the lost attempt and its worker', async () => {
    const taskIds = await Promise.all(
      [0, 1, 2].map(async () => String((await client.createTask('hold', { ms: 120_000 }))['taskId'])),
    );
    const holders = await Promise.all(taskIds.map(runningOn));
    expect(new Set(holders).size).to.equal(3);
    // The worker that continues them: it can tell who is gone only once its own connections are an interval old.
    survivor = await system.addWorker({ WORKER_CONCURRENCY: '3' });
    await new Promise((resolve) => setTimeout(resolve, 5500));

    // Killed at different moments of the survivor's rounds: 0, 1.7 and 3.4 s apart.
    const continued = await Promise.all(
      taskIds.map(async (taskId, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 1700));
        const victim = workerNamed(system, holders[i] as string);
        const killedAt = Date.now();
        await victim.stop('SIGKILL');
        const seen = new Set<string>();
        const next = await eventually(
          async () => {
            const message = String((await read(taskId))['statusMessage']);
            seen.add(message);
            const worker = RUNNING.exec(message)?.[1];
            return worker !== undefined && worker !== holders[i] ? worker : undefined;
          },
          20_000,
          100,
        );
        const ms = Date.now() - killedAt;
        // Nothing but the dead worker's note, the loss and the new worker's note.
        const expected = [`Running on ${holders[i]}.`, lostMessage(1, holders[i] as string), `Running on ${next}.`];
        expect([...seen].filter((message) => !expected.includes(message))).to.deep.equal([]);
        return { taskId, next, ms };
      }),
    );
    continuedIds = taskIds;
    const times = continued.map((run) => run.ms);
    console.log(`      kill -9 to the task running again: ${times.join(', ')} ms (median ${median(times)} ms)`);
    for (const { taskId, next, ms } of continued) {
      expect(ms, 'from kill -9 to the next attempt').to.be.below(15_000);
      expect(workerNamed(system, next)).to.equal(survivor);
      const stored = await store.inspect(taskId);
      const holder = holders[taskIds.indexOf(taskId)] as string;
      expect(stored?.attempts.map(({ attempt, worker, ending }) => ({ attempt, worker, ending }))).to.deep.equal([
        { attempt: 1, worker: holder, ending: 'lost' },
        { attempt: 2, worker: next, ending: undefined },
      ]);
      // The loss is in the status history too, between the two runs.
      expect(stored?.history.map((entry) => entry.statusMessage).slice(-3)).to.deep.equal([
        `Running on ${holder}.`,
        lostMessage(1, holder),
        `Running on ${next}.`,
      ]);
    }
  });

  it('while no worker is free, tasks/get on both wires and mcpt inspect (the dashboard’s data) say which attempt was lost with which worker; then it continues', async () => {
    // The survivor's three slots are taken (the tasks above): this task runs on a new worker.
    const victim = await system.addWorker({ WORKER_CONCURRENCY: '1' });
    const taskId = String((await client.createTask('hold', { ms: 120_000 }))['taskId']);
    const modernGet = () =>
      modernResult(system.apiUrl, 'tasks/get', { taskId }, { capabilities: WITH_TASKS, bearer: API_KEY });
    const holder = await runningOn(taskId);
    expect(workerNamed(system, holder)).to.equal(victim);
    await victim.stop('SIGKILL');
    const lost = lostMessage(1, holder);
    const legacy = await eventually(async () => {
      const task = await read(taskId);
      return task['statusMessage'] === lost ? task : undefined;
    }, 15_000);
    expect(legacy['status']).to.equal('working');
    const modern = await modernGet();
    expect(modern).to.deep.include({ status: 'working', statusMessage: lost });

    let out = '';
    const code = await runCli(['inspect', taskId, '--json'], {
      out: (text) => (out += text),
      err: () => undefined,
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code).to.equal(0);
    const inspection = JSON.parse(out) as {
      task: { statusMessage: string };
      attempts: { attempt: number; worker: string; ending?: string; startedAt: string; endedAt?: string }[];
    };
    expect(inspection.task.statusMessage).to.equal(lost);
    expect(inspection.attempts).to.have.length(1);
    expect(inspection.attempts[0]).to.deep.include({ attempt: 1, worker: holder, ending: 'lost' });
    expect(Date.parse(String(inspection.attempts[0]?.endedAt))).to.be.above(
      Date.parse(String(inspection.attempts[0]?.startedAt)),
    );

    // A slot frees: the task continues on the survivor.
    await client.call('tasks/cancel', { taskId: continuedIds[0] });
    const next = await eventually(async () => RUNNING.exec(String((await modernGet())['statusMessage']))?.[1], 10_000);
    expect(workerNamed(system, next)).to.equal(survivor);
  });
});

describe('recovery in seconds: what must not be taken for a death (real workers, WORKER_LIVENESS_CHECK_MS=1000)', function () {
  this.timeout(60_000);
  let system: System;
  let store: TaskStore;
  let client: McpTestClient;

  before(async () => {
    system = await startSystem({
      apis: 1,
      workers: 2,
      env: {
        MCPT_TOOLS: TOOLS,
        WORKER_CONCURRENCY: '1',
        WORKER_LIVENESS_CHECK_MS: '1000',
        WORKER_SHUTDOWN_GRACE_MS: '300',
      },
    });
    store = new TaskStore(system.redis, new KeySpace(system.prefix));
    client = await McpTestClient.connect(system.apiUrl);
    // Every worker can tell who is gone once its own connections are an interval old.
    await new Promise((resolve) => setTimeout(resolve, 1200));
  });
  after(async () => {
    await system?.stop();
  });

  it('a worker whose event loop is held for four intervals keeps its task: one attempt, completed where it began', async () => {
    const taskId = String((await client.createTask('busy', { ms: 4000 }))['taskId']);
    const result = await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
    const report = result['structuredContent'] as { pid: number; attempt: number };
    expect(report.attempt).to.equal(1);
    const stored = await store.inspect(taskId);
    expect(stored?.record.status).to.equal('completed');
    expect(stored?.attempts.map(({ attempt, ending }) => ({ attempt, ending }))).to.deep.equal([
      { attempt: 1, ending: 'completed' },
    ]);
    expect(stored?.attempts[0]?.worker).to.match(new RegExp(`-${report.pid}$`));
  });

  it('a worker stopped with SIGTERM hands its task back: the next run has ctx.attempt 2, and the history says it was handed back', async () => {
    const taskId = String((await client.createTask('hold', { ms: 3000 }))['taskId']);
    const holder = await eventually(
      async () => RUNNING.exec(String((await client.call('tasks/get', { taskId }))['statusMessage']))?.[1],
    );
    const stopping = workerNamed(system, holder);
    expect(await stopping.stop('SIGTERM')).to.equal(0);
    const result = await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
    const report = result['structuredContent'] as { pid: number; attempt: number };
    expect(report.attempt, 'ctx.attempt counts the hand-back').to.equal(2);
    expect(report.pid).to.not.equal(stopping.process.pid);
    const stored = await store.inspect(taskId);
    expect(stored?.record.handBacks).to.equal(1);
    expect(stored?.attempts.map(({ attempt, worker, ending }) => ({ attempt, worker, ending }))).to.deep.equal([
      { attempt: 1, worker: holder, ending: 'handed-back' },
      { attempt: 2, worker: stored?.attempts[1]?.worker, ending: 'completed' },
    ]);
    expect(stored?.history.map((entry) => entry.statusMessage)).to.include(
      `Attempt 1 was handed back by ${holder}, which is shutting down. The task waits for another worker.`,
    );
  });
});
