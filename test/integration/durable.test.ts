// Durable execution inside a tool (docs/durable-execution.md) with real workers (in the test's process; a process of its own for the one a test kills), real Redis and real HTTP:
// child tasks on one worker of concurrency 1 and their cancellation, a step's side effect once across a retry, the
// children listed with their parent on both wires, what operators see, and last a worker SIGKILLed during a
// checkpointed loop whose task another worker resumes after the last checkpoint (examples/long-import).
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '@mcp-tasks/cli';
import { createEngine, KeySpace, TaskKeys, TaskStore, type DurableView, type StepView } from '@mcp-tasks/engine';
import { NonDeterministicCallError, RunnerMeta, TaskKind } from '@mcp-tasks/protocol';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { modernResult, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type ServiceHandle, type System } from '../support/in-process.ts';
import { spawnWorker } from '../support/processes.ts';

const ADMIN_TOKEN = 'durable-admin-token-0123456789';

type Task = Record<string, unknown>;

describe('durable execution: checkpoints, steps and child tasks (1 api, 1 worker of concurrency 1)', function () {
  this.timeout(90_000);
  let system: System;
  let tasks: TaskKeys;
  let scratch: string;

  before(async () => {
    system = await startSystem({
      apis: 1,
      workers: 1,
      env: {
        // The tests' own tools, and the two examples' (each exercised here as its README runs it).
        MCPT_TOOLS: [
          './test/fixtures/durable/tools.ts',
          './examples/long-import/src/tools.ts',
          './examples/fan-out/src/tools.ts',
        ].join(','),
        WORKER_CONCURRENCY: '1',
        // Short locks: a killed worker's job is recovered within about two seconds.
        WORKER_LOCK_DURATION_MS: '1000',
        WORKER_STALLED_INTERVAL_MS: '1000',
        CANCEL_CHECK_INTERVAL_MS: '500',
        RESULT_RECHECK_MS: '1000',
        ADMIN_TOKEN,
      },
    });
    tasks = new TaskKeys(new KeySpace(system.prefix));
    scratch = mkdtempSync(join(tmpdir(), 'mcpt-durable-'));
  });
  after(async () => {
    await system?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const liveWorker = (): ServiceHandle => {
    const worker = system.workers.at(-1);
    if (!worker) throw new Error('no worker');
    return worker;
  };

  async function settled(client: McpTestClient, taskId: unknown, timeoutMs = 20_000): Promise<Task> {
    return eventually(async () => {
      const task = await client.call('tasks/get', { taskId });
      return ['completed', 'failed', 'cancelled'].includes(String(task['status'])) ? task : undefined;
    }, timeoutMs);
  }

  async function result(client: McpTestClient, taskId: unknown): Promise<Task> {
    return client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
  }

  /** The caller's tasks, every page. */
  async function listAll(client: McpTestClient): Promise<Task[]> {
    const all: Task[] = [];
    let cursor: unknown;
    do {
      const page = await client.call('tasks/list', cursor === undefined ? {} : { cursor });
      all.push(...(page['tasks'] as Task[]));
      cursor = page['nextCursor'];
    } while (cursor !== undefined);
    return all;
  }

  const parentOf = (task: Task): unknown =>
    (task['_meta'] as Record<string, { taskId: string }> | undefined)?.[RunnerMeta.ParentTask]?.taskId;

  /** The root of the tree the first test runs, which operators then inspect. */
  let root = '';

  it("T-LIST-3: a parent whose children are of its own tool completes on one worker of concurrency 1; tasks/list names each child's parent in _meta", async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    root = String((await client.createTask('tree', { depth: 2, width: 2 }))['taskId']);
    expect((await settled(client, root))['status']).to.equal('completed');
    expect((await result(client, root))['structuredContent']).to.include({ tasks: 7 });

    const listed = await listAll(client);
    expect(listed).to.have.length(7);
    const byId = new Map(listed.map((task) => [String(task['taskId']), task]));
    expect(parentOf(byId.get(root) as Task)).to.equal(undefined);
    const children = listed.filter((task) => parentOf(task) === root);
    expect(children).to.have.length(2);
    for (const child of children) {
      expect(child['status']).to.equal('completed');
      expect(listed.filter((task) => parentOf(task) === child['taskId'])).to.have.length(2);
    }
    // tasks/get renders the same _meta (T-GET-*), and the worker ran all seven itself.
    const child = await client.call('tasks/get', { taskId: children[0]?.['taskId'] });
    expect(parentOf(child)).to.equal(root);
    const settledHere = liveWorker()
      .records()
      .filter((line) => line['message'] === 'task settled' && byId.has(String(line['taskId'])));
    expect(settledHere).to.have.length(7);
  });

  it("operators see the tree: mcpt inspect lists a task's children and names its parent; so does the dashboard", async () => {
    const cli = async (...args: string[]) => {
      let out = '';
      const code = await runCli(args, {
        out: (text) => (out += text),
        err: () => undefined,
        env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
      });
      expect(code).to.equal(0);
      return out;
    };
    const inspected = JSON.parse(await cli('inspect', root, '--json')) as { durable: DurableView };
    expect(inspected.durable.parent).to.equal(undefined);
    expect(inspected.durable.children.map((child) => [child.tool, child.status])).to.deep.equal([
      ['tree', 'completed'],
      ['tree', 'completed'],
    ]);
    const child = inspected.durable.children[0]?.taskId ?? '';
    const text = await cli('inspect', child);
    expect(text).to.match(new RegExp(`parent\\s+${root}`));
    expect(text).to.match(/children\s+2/);
    expect(text).to.include('Child tasks:');

    const base = system.apiUrl.replace(/\/mcp$/, '');
    const detail = await fetch(`${base}/admin/api/tasks/${child}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const page = (await detail.json()) as { durable: DurableView };
    expect(page.durable.parent).to.equal(root);
    expect(page.durable.children).to.have.length(2);
  });

  it('the fan-out example (examples/fan-out): one child task per input, summed, on the same worker', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const texts = ['one', 'two words', 'and three words', '', 'a b c d e'];
    const parent = String((await client.createTask('count_words_in_all', { texts, ms: 50 }))['taskId']);
    expect((await settled(client, parent))['status']).to.equal('completed');
    expect((await result(client, parent))['structuredContent']).to.deep.equal({ total: 11, perText: [1, 2, 3, 0, 5] });
    const children = (await listAll(client)).filter((task) => parentOf(task) === parent);
    expect(children.map((task) => task['status'])).to.deep.equal(Array(5).fill('completed'));
  });

  it('a child call is a step: a retried parent waits for the same child instead of starting another', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const parent = String((await client.createTask('retried_parent', {}))['taskId']);
    expect((await settled(client, parent))['status']).to.equal('completed');
    const report = JSON.parse(
      String(((await result(client, parent))['content'] as { text: string }[])[0]?.text),
    ) as Record<string, unknown>;
    expect(report).to.deep.equal({ attempt: 2, child: { words: 2 } });
    expect((await listAll(client)).filter((task) => parentOf(task) === parent)).to.have.length(1);
  });

  it("replay refuses to guess: unkeyed child calls made in another order in the next attempt fail with a NonDeterministicCallError, never with the other calls' results", async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const parent = String((await client.createTask('reordered_calls', {}))['taskId']);
    const done = await settled(client, parent);
    expect(done['status']).to.equal('failed');
    const { message } = await expectRpcError(result(client, parent), -32603);
    // The first call of the second run (text 'three words here') is count_words#1, which the first run filed for 'one'.
    expect(message).to.match(/Child call 'count_words#1' of task \S+ is not the call an earlier attempt made/);
    expect(message).to.match(/it was 'count_words' \{"text":"one","ms":0\} \(task \S+\)/);
    expect(message).to.include(`it is now 'count_words' {"text":"three words here","ms":0}`);
    expect(message).to.include('make them in the same order in every attempt, or pass a key');
    // No retry after it, and no child started by the second run: the first run's three are the only ones.
    expect(String(done['statusMessage'])).to.not.match(/Attempt 3/);
    expect((await listAll(client)).filter((task) => parentOf(task) === parent)).to.have.length(3);
  });

  it('replay: keyed child calls may come in any order (each gets its own child), and a key given to another call is refused', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const keyed = String((await client.createTask('reordered_calls', { keys: true }))['taskId']);
    expect((await settled(client, keyed))['status']).to.equal('completed');
    expect((await result(client, keyed))['structuredContent']).to.deep.equal({
      one: 1,
      'two words': 2,
      'three words here': 3,
    });
    expect((await listAll(client)).filter((task) => parentOf(task) === keyed)).to.have.length(3);

    const reused = String((await client.createTask('reordered_calls', { reuseKey: true }))['taskId']);
    expect((await settled(client, reused))['status']).to.equal('failed');
    const { message } = await expectRpcError(result(client, reused), -32603);
    expect(message).to.match(/Child call 'text-0' of task \S+ is not the call an earlier attempt made/);
    expect(message).to.include('A key names one call: give each different call a key of its own.');
  });

  it('replay refuses to guess in the create step too: a call key filed meanwhile (by an attempt still running) for another call is refused, the same call gets the same child', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const engine = createEngine(
      { redis: system.redis },
      { REDIS_PREFIX: system.prefix, SESSION_IDLE_TTL_MS: 3_600_000 },
    );
    const held = String((await client.createTask('hold', {}))['taskId']);
    try {
      const parent = await eventually(async () => {
        const record = await engine.store.get(held);
        return String(record?.statusMessage).startsWith('Running on') ? record : undefined;
      });
      if (!parent) throw new Error('no parent');
      // As ctx.callTool files a call: the parent's attempt 1, under key `k`, without the snapshot knowing it.
      const call = (text: string) =>
        engine.tasks.create({
          kind: TaskKind.Task,
          owner: parent.owner,
          sessionId: parent.sessionId,
          tool: 'count_words',
          arguments: { text, ms: 0 },
          retrySafe: true,
          parent: { taskId: held, key: 'k', attempt: 1, maxEntries: 10, keyed: true },
        });
      const first = await call('one two');
      expect((await call('one two')).taskId).to.equal(first.taskId);
      const refused = await call('three').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(NonDeterministicCallError);
      expect(refused).to.deep.include({ name: 'NonDeterministicCallError', taskId: held, key: 'k' });
      expect((refused as NonDeterministicCallError).recorded).to.deep.include({
        tool: 'count_words',
        taskId: first.taskId,
      });
      expect(String((refused as Error).message)).to.include(`it was 'count_words' {"text":"one two","ms":0}`);
    } finally {
      await client.call('tasks/cancel', { taskId: held });
      await engine.close();
    }
  });

  /** Runs `mcpt` against the system's Redis: its exit code, stdout and stderr. */
  async function mcpt(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(args, {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    return { code, out, err };
  }

  /** A charge_then_ship task that failed at its closed gate after its charge step, child call and checkpoint. */
  async function failedAfterCharge(client: McpTestClient, name: string) {
    const ledger = join(scratch, `${name}.ledger`);
    const gate = join(scratch, `${name}.gate`);
    writeFileSync(gate, 'closed');
    const taskId = String((await client.createTask('charge_then_ship', { ledger, gate }))['taskId']);
    const failed = await settled(client, taskId);
    expect(failed['status']).to.equal('failed');
    expect(readFileSync(ledger, 'utf8')).to.equal('charged\n');
    rmSync(gate);
    return { taskId, ledger };
  }

  it("mcpt retry --resume continues a failed task from its completed steps: the charge step runs zero more times, the child call's result and the checkpoint carry over, and inspect links the two tasks both ways", async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const { taskId: failed, ledger } = await failedAfterCharge(client, 'resume');
    const resumed = await mcpt('retry', failed, '--resume', '--yes', '--json');
    expect(resumed.code, resumed.err).to.equal(0);
    const answer = JSON.parse(resumed.out) as { retriedFrom: string; resumed: boolean; task: Task; note?: string };
    expect(answer).to.include({ retriedFrom: failed, resumed: true });
    expect(answer.note).to.equal(undefined);
    const taskId = String(answer.task['taskId']);

    expect((await settled(client, taskId))['status']).to.equal('completed');
    expect((await result(client, taskId))['structuredContent']).to.deep.equal({
      charge: { charged: 10 },
      words: { words: 4 },
      shipped: { shipped: true },
      lastCheckpoint: { shipping: true },
    });
    expect(readFileSync(ledger, 'utf8')).to.equal('charged\n');
    // The resumed task waited for the failed one's child instead of starting another.
    expect((await listAll(client)).filter((task) => parentOf(task) === taskId)).to.have.length(0);

    const inspected = JSON.parse((await mcpt('inspect', taskId, '--json')).out) as {
      durable: DurableView;
      steps: StepView[];
    };
    expect(inspected.durable.resumedFrom).to.equal(failed);
    expect(inspected.steps.map((step) => [step.kind, step.name, step.resumedFrom])).to.deep.equal([
      ['step', 'charge', failed],
      ['call', 'count_words#1', failed],
      ['step', 'ship', undefined],
    ]);
    const [charge, call, ship] = inspected.steps as [StepView, StepView, StepView];
    expect(charge).to.include({ attempt: 1, bytes: Buffer.byteLength('{"charged":10}') });
    expect(charge.durationMs).to.be.at.least(0);
    expect(Date.parse(charge.startedAt)).to.be.at.most(Date.parse(call.startedAt));
    expect(call).to.include({ tool: 'count_words', status: 'completed', attempt: 1 });
    expect(call.bytes).to.be.above(0);
    expect(ship).to.include({ attempt: 1, bytes: Buffer.byteLength('{"shipped":true}') });
    const before = JSON.parse((await mcpt('inspect', failed, '--json')).out) as { durable: DurableView };
    expect(before.durable.resumedBy).to.equal(taskId);
    const text = (await mcpt('inspect', taskId)).out;
    expect(text).to.match(new RegExp(`resumed from\\s+${failed}`));
    expect(text).to.include('Steps and child calls:');
    expect(text).to.match(new RegExp(`1\\s+step\\s+charge\\s+\\S+\\s+\\S+\\s+1 of ${failed.slice(0, 8)}…\\s+14`));

    // A failed task is continued once.
    const again = await mcpt('retry', failed, '--resume', '--yes');
    expect(again.code).to.equal(1);
    expect(again.err).to.include(`was resumed already, by task ${taskId}`);
  });

  it('plain mcpt retry starts over and says so: the completed charge step runs again in the new task', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const { taskId: failed, ledger } = await failedAfterCharge(client, 'retry');
    const retried = await mcpt('retry', failed, '--yes');
    expect(retried.code, retried.err).to.equal(0);
    expect(retried.out).to.match(/^Retried task \S+ as new task (\S+) /);
    expect(retried.out).to.include(
      'The new task starts over: what the failed task kept (1 completed step, 1 child call and a checkpoint) does ' +
        'not carry over, and its completed steps run again. Add --resume to continue from them instead.',
    );
    const taskId = String(/as new task (\S+) /.exec(retried.out)?.[1]);
    expect((await settled(client, taskId))['status']).to.equal('completed');
    expect(readFileSync(ledger, 'utf8')).to.equal('charged\ncharged\n');
  });

  it('X-GET-1: a child of a 2026-07-28 task carries its parent in tasks/get too', async () => {
    const created = await modernResult(
      system.apiUrl,
      'tools/call',
      { name: 'tree', arguments: { depth: 1, width: 1 } },
      { capabilities: WITH_TASKS },
    );
    expect(created['resultType']).to.equal('task');
    const parent = String(created['taskId']);
    const done = await eventually(async () => {
      const task = await modernResult(system.apiUrl, 'tasks/get', { taskId: parent }, { capabilities: WITH_TASKS });
      return task['status'] === 'completed' ? task : undefined;
    });
    expect((done['result'] as Task)['structuredContent']).to.include({ tasks: 2 });
    const [childId] = await system.redis.smembers(tasks.children(parent));
    const child = await modernResult(system.apiUrl, 'tasks/get', { taskId: childId }, { capabilities: WITH_TASKS });
    expect(child['status']).to.equal('completed');
    expect(parentOf(child)).to.equal(parent);
  });

  it("a child's failure rejects callTool with an error the parent catches: a ChildTaskError (instanceof, name) for a failed child, an InvalidInputError for an unknown tool, invalid arguments or a ttl that is not a number", async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const outcomes: Record<string, Task> = {};
    for (const how of ['throws', 'unknown', 'invalid', 'bad_ttl']) {
      const taskId = String((await client.createTask('call_failing', { how }))['taskId']);
      expect((await settled(client, taskId))['status']).to.equal('completed');
      outcomes[how] = (await result(client, taskId))['structuredContent'] as Task;
    }
    // The parent's catch tells a failed child by its class and its name (issue 38).
    expect(outcomes['throws']).to.include({ name: 'ChildTaskError', childTaskError: true, code: -32603 });
    expect(outcomes['throws']?.['message']).to.match(
      /^Child task \S+ \(tool 'throws'\) failed: Tool 'throws' failed: the child broke$/,
    );
    expect(outcomes['unknown']).to.include({ name: 'InvalidInputError', childTaskError: false });
    expect(outcomes['unknown']?.['message']).to.match(/Unknown tool: 'no_such_tool'/);
    expect(outcomes['invalid']).to.include({ name: 'InvalidInputError', childTaskError: false });
    expect(outcomes['invalid']?.['message']).to.match(/Invalid arguments for tool 'count_words': text: must be string/);
    // Issue 37: a ttl that is not a number is the tool's mistake, said so (it was a raw Lua error).
    expect(outcomes['bad_ttl']).to.include({
      name: 'InvalidInputError',
      message: `callTool's ttl must be a whole number of milliseconds above 0 (or left out for the rest of the parent's), got "abc"`,
    });
    // Neither an unknown tool nor invalid arguments started a child: the failing one is the only child.
    expect((await listAll(client)).filter((task) => parentOf(task) !== undefined)).to.have.length(1);
  });

  it('cost: a task keeps at most DURABLE_MAX_TOTAL_BYTES (4 MiB) of checkpoint and step results, however many steps it may keep', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask('fill_steps', { bytes: 60_000 }))['taskId']);
    expect((await settled(client, taskId))['status']).to.equal('completed');
    const outcome = (await result(client, taskId))['structuredContent'] as Record<string, unknown>;
    // 69 steps of 60,000 bytes and their names take 4,140,335 bytes; the 70th would pass 4,194,304.
    expect(outcome).to.deep.include({ kept: 69, code: 'durable-full' });
    expect(outcome['message']).to.match(
      /would keep 4200340 bytes of checkpoint and step results with this step, more than the 4194304 DURABLE_MAX_TOTAL_BYTES allows/,
    );
    const stored = await system.redis.hgetall(tasks.durable(taskId));
    // The steps' facts (`f:s:<name>`, for operators) are not counted: small, and bounded by DURABLE_MAX_STEPS.
    const bytes = Object.entries(stored)
      .filter(([field]) => !field.startsWith('f:'))
      .reduce((sum, [field, value]) => sum + field.length + value.length, 0);
    expect(bytes).to.equal(4_140_335);
    expect(Number(await system.redis.hget(tasks.record(taskId), 'durableBytes'))).to.equal(bytes);
  });

  it('T-CANCEL-2: cancelling a parent cancels its children, the running one and the queued one, and stops their tools', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const parent = String((await client.createTask('hold_children', { count: 2 }))['taskId']);
    // One child runs in the slot its waiting parent lent; the other waits for a slot.
    const children = await eventually(async () => {
      const found = (await listAll(client)).filter((task) => parentOf(task) === parent);
      const running = found.filter((task) => String(task['statusMessage']).startsWith('Running on'));
      return found.length === 2 && running.length === 1 ? found : undefined;
    });
    const cancelled = await client.call('tasks/cancel', { taskId: parent });
    expect(cancelled['status']).to.equal('cancelled');
    for (const child of children) {
      const after = await client.call('tasks/get', { taskId: child['taskId'] });
      expect(after['status']).to.equal('cancelled');
      expect(after['statusMessage']).to.equal(`Cancelled with its parent task ${parent}.`);
    }
    const running = children.find((task) => String(task['statusMessage']).startsWith('Running on'));
    await eventually(() =>
      liveWorker()
        .records()
        .some((line) => line['message'] === 'tool stopped' && line['taskId'] === running?.['taskId'])
        ? true
        : undefined,
    );
  });

  it("a step's side effect happens once across a retry: the second run gets the stored result (as JSON has it)", async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const file = join(scratch, 'step-once.log');
    const taskId = String((await client.createTask('step_once', { file }))['taskId']);
    expect((await settled(client, taskId))['status']).to.equal('completed');
    expect(readFileSync(file, 'utf8')).to.equal('attempt 1\n');
    expect((await result(client, taskId))['structuredContent']).to.deep.equal({
      stored: { ranIn: 1, at: '1970-01-01T00:00:00.000Z' },
      attempt: 2,
    });
  });

  it('a worker SIGKILLed during a checkpointed loop: another worker resumes after the last checkpoint (examples/long-import), and operators see the checkpoint', async () => {
    // The worker this test kills runs in a process of its own; the worker inside the test's process steps aside.
    const killable = await spawnWorker(system.env);
    for (const worker of system.workers) await worker.stop();
    system.workers.push(killable);
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String(
      (await client.createTask('import_records', { records: 40, batch: 1, batchMs: 100 }))['taskId'],
    );
    const seen = await eventually(async () => {
      const saved = await system.redis.hget(tasks.durable(taskId), 'checkpoint');
      const next = saved ? (JSON.parse(saved) as { next: number }).next : 0;
      return next >= 5 ? next : undefined;
    });
    const first = liveWorker();
    await first.stop('SIGKILL');
    const second = await system.addWorker();

    expect((await settled(client, taskId, 30_000))['status']).to.equal('completed');
    const report = (await result(client, taskId))['structuredContent'] as Record<string, number>;
    expect(report['imported']).to.equal(40);
    expect(report['resumedAt']).to.be.at.least(seen);
    expect(report['attempt']).to.be.at.least(2);
    expect(second.records().some((line) => line['message'] === 'task settled' && line['taskId'] === taskId)).to.equal(
      true,
    );

    // `mcpt inspect` shows when the last checkpoint was saved and its size.
    let out = '';
    const code = await runCli(['inspect', taskId, '--json'], {
      out: (text) => (out += text),
      err: () => undefined,
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code).to.equal(0);
    const inspected = JSON.parse(out) as { durable: { checkpoint: { at: string; bytes: number }; steps: number } };
    expect(inspected.durable.checkpoint.bytes).to.equal(Buffer.byteLength(JSON.stringify({ next: 40 })));
    expect(Date.parse(inspected.durable.checkpoint.at)).to.be.above(0);
  });
});

describe('cost: child tasks (issue 37): a cap per task that the api sets, and their principal’s rate limit', function () {
  this.timeout(60_000);
  const RATE_LIMIT = 100;
  const WINDOW_MS = 1e12;
  let system: System;

  before(async () => {
    system = await startSystem({
      workers: 0,
      env: {
        MCPT_TOOLS: './test/fixtures/durable/tools.ts',
        MAX_CHILDREN_PER_TASK: '3',
        // One window for the whole file: no count is split in two.
        RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
        RATE_LIMIT_PER_PRINCIPAL: String(RATE_LIMIT),
      },
    });
    // The worker's own setting is higher: the api's, on the task, decides.
    await system.addWorker({ MAX_CHILDREN_PER_TASK: '1000' });
  });
  after(async () => {
    await system?.stop();
  });

  /** The task's outcome as the record holds it (read from Redis: the principal's requests may be spent). */
  async function outcomeOf(taskId: string): Promise<Record<string, unknown>> {
    const store = new TaskStore(system.redis, new KeySpace(system.prefix));
    const record = await eventually(async () => {
      const found = await store.get(taskId);
      return found?.status === 'completed' ? found : undefined;
    }, 20_000);
    const outcome = record.outcome as { result?: { structuredContent?: Record<string, unknown> } } | undefined;
    return outcome?.result?.structuredContent ?? {};
  }

  it('cost: a task starts at most MAX_CHILDREN_PER_TASK children as the api set it (3), whatever the worker’s own setting (1000)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask('spawn_children', { count: 10 }))['taskId']);
    const outcome = await outcomeOf(taskId);
    expect(outcome, JSON.stringify(outcome)).to.include({ started: 3, name: 'LimitExceededError' });
    expect(outcome['message']).to.match(/has started 3 child tasks, the most MAX_CHILDREN_PER_TASK allows/);
    expect(await system.redis.hget(`${system.prefix}:task:${taskId}`, 'maxChildren')).to.equal('3');
  });

  it('cost: child tasks are charged to their principal’s rate limit (RATE_LIMIT_PER_PRINCIPAL) as its requests are; past it ctx.callTool is refused', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    // The principal has spent all but three operations of its window (its requests fill the same bucket).
    const bucket = new KeySpace(system.prefix).rateBucket(
      'principal',
      `session:${String(client.sessionId)}`,
      Math.floor(Date.now() / WINDOW_MS),
    );
    await system.redis.set(bucket, RATE_LIMIT - 3, 'PX', 600_000);
    const taskId = String((await client.createTask('spawn_children', { count: 3 }))['taskId']);
    const outcome = await outcomeOf(taskId);
    // The call took one operation, two children the rest; the third child is refused.
    expect(outcome).to.include({ started: 2, name: 'LimitExceededError' });
    expect(outcome['message']).to.match(
      /at most 100 per 1000000000000 ms \(RATE_LIMIT_PER_PRINCIPAL\), child tasks included/,
    );
    expect(Number(await system.redis.get(bucket))).to.equal(RATE_LIMIT + 1);
  });
});
