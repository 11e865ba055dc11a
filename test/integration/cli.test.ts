// The operator CLI against a real system (api + worker processes, real Redis) holding tasks in every status:
// each command's table output and its --json, filters and pagination, errors and exit statuses.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { chooseRedis, removeStartState, runCli, startStatePath, writeStartState } from '@mcp-tasks/cli';
import { createToolQueue, KeySpace, TaskStore, toolJobOptions } from '@mcp-tasks/engine';
import { TaskStatus } from '@mcp-tasks/protocol';
import { eventually, McpTestClient, sleep, type RpcError } from '../support/mcp-client.ts';
import { repoRoot, startSystem, type System } from '../support/processes.ts';

interface CliRun {
  code: number;
  /** The first line on stderr: which Redis the command read (issue 31), apart from the rest of stderr. */
  redis: string;
  out: string;
  err: string;
}

interface JsonTask {
  taskId: string;
  status: string;
  statusMessage?: string;
  tool: string;
  owner: string;
  kind: string;
  createdAt: string;
  lastUpdatedAt: string;
}

/** A run's stderr split into its first line, which names the Redis read, and the rest. */
function withRedisLine(code: number, out: string, stderr: string): CliRun {
  const [first = '', ...rest] = stderr.split('\n');
  if (!first.startsWith('Redis: ')) return { code, out, err: stderr, redis: '' };
  return { code, out, err: rest.join('\n'), redis: first };
}

describe('operator CLI (mcpt) against tasks in every status', function () {
  this.timeout(60_000);
  let system: System;
  let client: McpTestClient;
  let other: McpTestClient;
  const ids = {
    completed: '',
    failedResult: '',
    crashed: '',
    cancelled: '',
    running: '',
    inputRequired: '',
    waiting: '',
    foreign: '',
  };

  /** How the CLI shows a session owner (docs/security.md, "Operators' views"): never the session id itself. */
  const labelOf = (of: McpTestClient) =>
    `session:sha256:${createHash('sha256').update(String(of.sessionId)).digest('hex').slice(0, 16)}`;

  function expectNoSessionId(...outputs: string[]): void {
    for (const output of outputs) {
      for (const id of [client.sessionId, other.sessionId]) expect(output).not.to.contain(String(id));
    }
  }

  function cli(...args: string[]): Promise<CliRun> {
    return cliWithEnv({}, ...args);
  }

  async function cliWithEnv(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
    let out = '';
    let err = '';
    const code = await runCli(args, {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix, ...env },
    });
    return withRedisLine(code, out, err);
  }

  async function cliJson<T>(...args: string[]): Promise<T> {
    const run = await cli(...args, '--json');
    expect(run.code, run.err).to.equal(0);
    return JSON.parse(run.out) as T;
  }

  /** A run at a terminal where the operator answers every question with `answer`; the questions go to `asked`. */
  async function cliAnswering(answer: string, asked: string[], ...args: string[]): Promise<CliRun> {
    let out = '';
    let err = '';
    const code = await runCli(args, {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
      ask: (question) => {
        asked.push(question);
        return Promise.resolve(answer);
      },
    });
    return withRedisLine(code, out, err);
  }

  async function statusOf(taskId: string): Promise<string> {
    return String((await client.call('tasks/get', { taskId }))['status']);
  }

  async function running(taskId: string): Promise<void> {
    await eventually(async () => {
      const task = await client.call('tasks/get', { taskId });
      return String(task['statusMessage']).startsWith('Running') ? true : undefined;
    });
  }

  before(async () => {
    system = await startSystem({ env: { WORKER_CONCURRENCY: '2', WORKER_SHUTDOWN_GRACE_MS: '500' } });
    client = await McpTestClient.connect(system.apiUrl);
    other = await McpTestClient.connect(system.apiUrl);
    const create = async (tool: string, args: Record<string, unknown>, by = client) => {
      await sleep(3); // distinct creation times keep the expected newest-first order exact
      return String((await by.createTask(tool, args))['taskId']);
    };

    ids.completed = await create('wait', { seconds: 0 });
    await client.call('tasks/result', { taskId: ids.completed });
    ids.failedResult = await create('wait', { seconds: 0, fail: true });
    await client.call('tasks/result', { taskId: ids.failedResult });
    ids.crashed = await create('crash', { message: 'disk on fire' });
    await client.rpc('tasks/result', { taskId: ids.crashed });
    ids.foreign = await create('wait', { seconds: 0 }, other);
    await other.call('tasks/result', { taskId: ids.foreign });
    ids.cancelled = await create('wait', { seconds: 30 });
    await client.call('tasks/cancel', { taskId: ids.cancelled });
    await eventually(async () =>
      (await system.redis.llen(`${system.prefix}:tool-wait:active`)) === 0 ? true : undefined,
    );

    // Two long tasks fill the worker's two slots; the third waits in the queue.
    ids.running = await create('wait', { seconds: 30 });
    ids.inputRequired = await create('wait', { seconds: 30 });
    await running(ids.running);
    await running(ids.inputRequired);
    ids.waiting = await create('wait', { seconds: 1 });
    // No tool of this build asks for input yet: move the task the way the worker would, through the store.
    const store = new TaskStore(system.redis, new KeySpace(system.prefix));
    const moved = await store.transition(
      { taskId: ids.inputRequired, sessionId: String(client.sessionId), owner: `session:${String(client.sessionId)}` },
      'input_required',
      {
        statusMessage: 'Waiting for the client to answer.',
      },
    );
    expect(moved.ok).to.equal(true);
  });

  after(async () => {
    await system?.stop();
  });

  it('answers --help for the program and for every command, without Redis', async () => {
    const top = await runCli(['--help'], { out: () => undefined, err: () => undefined, env: {} });
    expect(top).to.equal(0);
    for (const command of ['overview', 'list', 'inspect', 'cancel', 'retry', 'purge']) {
      let out = '';
      const code = await runCli([command, '--help'], {
        out: (text) => (out += text),
        err: () => undefined,
        env: { REDIS_URL: 'redis://127.0.0.1:1' },
      });
      expect(code, command).to.equal(0);
      expect(out).to.include(`Usage: mcpt ${command}`);
      expect(out).to.include('--json');
    }
  });

  it('overview: counts per MCP status and BullMQ state, workers, the oldest waiting task', async () => {
    const overview = await cliJson<{
      tasks: { total: number; byStatus: Record<string, number>; byKind: Record<string, number> };
      jobs: Record<string, number>;
      workers: { name: string }[];
      oldestWaiting?: { taskId: string; tool: string; waitingMs: number };
    }>('overview');
    expect(overview.tasks.byStatus).to.deep.equal({
      working: 2,
      input_required: 1,
      completed: 2,
      failed: 2,
      cancelled: 1,
    });
    expect(overview.tasks.total).to.equal(8);
    expect(overview.tasks.byKind).to.deep.equal({ task: 8, call: 0 });
    // Tool queues keep their waiting jobs in BullMQ's prioritized set (the fair order between principals,
    // docs/scheduling.md): they count as waiting all the same.
    expect(overview.jobs).to.deep.equal({ waiting: 1, active: 2, delayed: 0, held: 0 });
    expect(overview.workers.length).to.be.at.least(1);
    expect(overview.oldestWaiting?.taskId).to.equal(ids.waiting);
    expect(overview.oldestWaiting?.tool).to.equal('wait');

    const table = await cli('overview');
    expect(table.code).to.equal(0);
    expect(table.out).to.match(/^Tasks: 8 \(tasks 8, plain calls 0\)$/m);
    expect(table.out).to.match(/^input_required\s+1$/m);
    expect(table.out).to.match(/^failed\s+2$/m);
    expect(table.out).to.match(/^waiting\s+1\s+ready to start/m);
    expect(table.out).to.match(/^active\s+2\s/m);
    expect(table.out).to.match(/^Workers connected: [1-9]/m);
    expect(table.out).to.include(`Oldest waiting task: ${ids.waiting} (tool wait`);
    // Per tool scheduling: wait runs 2 (no limit) and has 1 queued (none delayed), by its owner's label.
    expect(table.out).to.match(new RegExp(`^wait\\s+2\\/-\\s+1\\s+0\\s+${labelOf(client)}: 1\\s`, 'm'));
    expect(table.out).to.include(`owner ${labelOf(client)}), waiting`);
    expectNoSessionId(table.out, JSON.stringify(overview));
  });

  it('list: every owner, newest first, with statuses; filters by status, tool, owner and age', async () => {
    const all = await cliJson<{ tasks: JsonTask[]; nextCursor?: string }>('list');
    expect(all.nextCursor).to.equal(undefined);
    const created = [
      ids.completed,
      ids.failedResult,
      ids.crashed,
      ids.foreign,
      ids.cancelled,
      ids.running,
      ids.inputRequired,
      ids.waiting,
    ];
    expect(all.tasks.map((task) => task.taskId)).to.deep.equal([...created].reverse());
    const status = Object.fromEntries(all.tasks.map((task) => [task.taskId, task.status]));
    expect(status[ids.inputRequired]).to.equal('input_required');
    expect(status[ids.cancelled]).to.equal('cancelled');
    expect(status[ids.crashed]).to.equal('failed');
    expect(all.tasks[0]).to.include.keys('createdAt', 'lastUpdatedAt', 'ttl', 'owner', 'tool', 'kind', 'expiresAt');

    const failed = await cliJson<{ tasks: JsonTask[] }>('list', '--status', 'failed');
    expect(failed.tasks.map((task) => task.taskId)).to.have.members([ids.failedResult, ids.crashed]);
    const live = await cliJson<{ tasks: JsonTask[] }>('list', '-s', 'working,input_required');
    expect(live.tasks.map((task) => task.taskId)).to.have.members([ids.running, ids.inputRequired, ids.waiting]);
    const crash = await cliJson<{ tasks: JsonTask[] }>('list', '--tool', 'crash');
    expect(crash.tasks.map((task) => task.taskId)).to.deep.equal([ids.crashed]);
    // An owner by the label the CLI shows (or by the owner itself, for an operator who has it).
    for (const owner of [labelOf(other), `session:${String(other.sessionId)}`]) {
      const foreign = await cliJson<{ tasks: JsonTask[] }>('list', '--owner', owner);
      expect(foreign.tasks.map((task) => task.taskId)).to.deep.equal([ids.foreign]);
      expect(foreign.tasks[0]?.owner).to.equal(labelOf(other));
    }
    expectNoSessionId(JSON.stringify(all));
    expect((await cliJson<{ tasks: JsonTask[] }>('list', '--older-than', '1h')).tasks).to.deep.equal([]);
    expect((await cliJson<{ tasks: JsonTask[] }>('list', '--newer-than', '1h')).tasks).to.have.length(8);

    const table = await cli('list', '--status', 'input_required');
    expect(table.code).to.equal(0);
    expect(table.out).to.match(/^TASK\s+STATUS\s+TOOL\s+OWNER\s+CREATED\s+UPDATED\s+STATUS MESSAGE$/m);
    expect(table.out).to.match(
      new RegExp(`^${ids.inputRequired}\\s+input_required\\s+wait\\s+${labelOf(client)}\\s`, 'm'),
    );
    expectNoSessionId(table.out, (await cli('list')).out);
    expect(table.out).to.include('Waiting for the client to answer.');
    expect((await cli('list', '--tool', 'nope')).out).to.equal('No tasks match.\n');
  });

  it('list: pages with --limit and --cursor cover every task once, in order', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await cliJson<{ tasks: JsonTask[]; nextCursor?: string }>(
        'list',
        '--limit',
        '3',
        ...(cursor ? ['--cursor', cursor] : []),
      );
      expect(page.tasks.length).to.be.at.most(3);
      seen.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(new Set(seen).size).to.equal(8);
    const first = await cli('list', '--limit', '3');
    expect(first.out).to.match(/^More: add --cursor c1\.\S+$/m);
  });

  it('inspect: record, status history with timestamps, job, result or error', async () => {
    type Inspection = {
      task: JsonTask;
      arguments: unknown;
      history: { at: string; status: string; statusMessage?: string }[];
      job: { state: string; attemptsStarted: number; maxAttempts: number; processedBy?: string } | null;
      result?: Record<string, unknown>;
      error?: { code: number; message: string };
    };
    const done = await cliJson<Inspection>('inspect', ids.completed);
    expect(done.task.status).to.equal('completed');
    expect(done.arguments).to.deep.equal({ seconds: 0 });
    // A no-op ends before its worker would note it as running (RUNNING_NOTE_AFTER_MS).
    expect(done.history.map((entry) => entry.status)).to.deep.equal(['working', 'completed']);
    expect(done.history[0]?.statusMessage).to.equal('The task is queued for a worker.');
    const times = done.history.map((entry) => Date.parse(entry.at));
    expect(times).to.deep.equal([...times].sort((a, b) => a - b));
    expect(done.history[0]?.at).to.equal(done.task.createdAt);
    expect(done.history[1]?.at).to.equal(done.task.lastUpdatedAt);
    expect(done.job).to.equal(null);
    expect(done.result?.['content']).to.deep.equal([{ type: 'text', text: 'Waited 0s' }]);

    const crashed = await cliJson<Inspection>('inspect', ids.crashed);
    expect(crashed.error).to.deep.include({ code: -32603, message: "Tool 'crash' failed: disk on fire" });

    const active = await cliJson<Inspection>('inspect', ids.running);
    expect(active.job?.state).to.equal('active');
    expect(active.job?.attemptsStarted).to.equal(1);
    expect(active.job?.maxAttempts).to.equal(3);
    expect(active.job?.processedBy).to.match(/^worker-/);

    const input = await cliJson<Inspection>('inspect', ids.inputRequired);
    expect(input.history.map((entry) => entry.status)).to.deep.equal(['working', 'working', 'input_required']);

    const text = await cli('inspect', ids.crashed);
    expect(text.code).to.equal(0);
    expect(text.out).to.match(new RegExp(`^task\\s+${ids.crashed}$`, 'm'));
    expect(text.out).to.match(/^status\s+failed$/m);
    expect(text.out).to.match(/^arguments\s+\{"message":"disk on fire"\}$/m);
    expect(text.out).to.match(/^AT\s+STATUS\s+STATUS MESSAGE$/m);
    expect(text.out).to.match(/^\d{4}-\d\d-\d\dT\S+Z\s+failed\s+Tool 'crash' failed: disk on fire$/m);
    expect(text.out).to.include('Error:\n{\n  "code": -32603');

    // The owner and the session by their labels: the session id is the session's credential.
    expect(text.out).to.match(new RegExp(`^owner\\s+${labelOf(client)}$`, 'm'));
    expect(text.out).to.match(new RegExp(`^session\\s+${labelOf(client).slice('session:'.length)}$`, 'm'));
    expect(done.task.owner).to.equal(labelOf(client));
    expectNoSessionId(text.out, JSON.stringify(done), JSON.stringify(await cliJson('inspect', ids.foreign)));

    const running = await cli('inspect', ids.running);
    expect(running.out).to.match(/^job\s+active \(running\), attempt 1 of 3, 0 failed$/m);
    expect(running.out).to.match(/^worker\s+worker-/m);

    const missing = await cli('inspect', '00000000-0000-4000-8000-000000000000');
    expect(missing.code).to.equal(1);
    expect(missing.err).to.match(/^error: Task 00000000-0000-4000-8000-000000000000 not found/);
  });

  it('cancel: moves a task of any owner to cancelled and stops its tool; a terminal one is refused', async () => {
    const run = await cli('cancel', ids.running, '--yes');
    expect(run.code, run.err).to.equal(0);
    expect(run.out).to.equal(`Cancelled task ${ids.running} (tool wait).\n`);
    const task = await client.call('tasks/get', { taskId: ids.running });
    expect(task['status']).to.equal('cancelled');
    expect(task['statusMessage']).to.equal('The task was cancelled by an operator.');
    await eventually(() =>
      system.workers[0]?.records().some((line) => line['taskId'] === ids.running && line['message'] === 'tool stopped')
        ? true
        : undefined,
    );
    const again = await cli('cancel', ids.running, '--yes');
    expect(again.code).to.equal(1);
    expect(again.err).to.include('is already cancelled');

    const json = await cliJson<JsonTask>('cancel', ids.inputRequired, '--message', 'Stopped for maintenance.', '--yes');
    expect(json).to.deep.include({
      taskId: ids.inputRequired,
      status: 'cancelled',
      statusMessage: 'Stopped for maintenance.',
    });
    expect(await statusOf(ids.inputRequired)).to.equal('cancelled');
  });

  it('retry: a failed task runs again as a new task of the same owner, tool and arguments', async () => {
    const retried = await cliJson<{ retriedFrom: string; task: JsonTask }>('retry', ids.failedResult, '--yes');
    expect(retried.retriedFrom).to.equal(ids.failedResult);
    const fresh = retried.task;
    expect(fresh.taskId).to.not.equal(ids.failedResult);
    expect(fresh).to.deep.include({ tool: 'wait', owner: labelOf(client), kind: 'task' });
    expect(fresh.statusMessage).to.equal(`Retry of task ${ids.failedResult}, queued for a worker.`);
    // The owner sees it, and it runs with the same arguments (it fails again, on purpose).
    const page = await client.call('tasks/list');
    expect((page['tasks'] as JsonTask[]).map((task) => task.taskId)).to.include(fresh.taskId);
    const result = await client.call('tasks/result', { taskId: fresh.taskId });
    expect(result['isError']).to.equal(true);
    const inspected = await cliJson<{ arguments: unknown }>('inspect', fresh.taskId);
    expect(inspected.arguments).to.deep.equal({ seconds: 0, fail: true });
    expect(await statusOf(ids.failedResult)).to.equal('failed');

    const text = await cli('retry', ids.crashed, '--yes');
    expect(text.code).to.equal(0);
    expect(text.out).to.match(
      new RegExp(`^Retried task ${ids.crashed} as new task [0-9a-f-]{36} \\(tool crash, owner ${labelOf(client)}\\)`),
    );
    expectNoSessionId(text.out, JSON.stringify(retried));

    const refused = await cli('retry', ids.completed, '--yes');
    expect(refused.code).to.equal(1);
    expect(refused.err).to.include('is completed; only failed tasks can be retried');
  });

  it('purge: deletes terminal tasks finished before the cutoff, never live ones; --dry-run only lists', async () => {
    await eventually(async () => ((await statusOf(ids.waiting)) === 'completed' ? true : undefined));
    expect((await cliJson<{ purged: number }>('purge', '--older-than', '1h', '--yes')).purged).to.equal(0);
    const live = String((await client.createTask('wait', { seconds: 30 }))['taskId']);
    const dry = await cliJson<{ purged: number; taskIds: string[]; dryRun: boolean }>(
      'purge',
      '--older-than',
      '1ms',
      '--dry-run',
    );
    expect(dry.dryRun).to.equal(true);
    expect(dry.taskIds).to.include.members([ids.completed, ids.crashed, ids.cancelled, ids.foreign, ids.waiting]);
    expect(dry.taskIds).to.not.include(live);
    expect(await statusOf(ids.completed)).to.equal('completed');

    const text = await cli('purge', '--older-than', '1ms', '--yes');
    expect(text.code).to.equal(0);
    expect(text.out).to.equal(`Purged ${dry.taskIds.length} terminal task(s) finished more than 1ms ago.\n`);
    for (const taskId of dry.taskIds) expect((await cli('inspect', taskId)).code, taskId).to.equal(1);
    try {
      await client.call('tasks/get', { taskId: ids.completed });
      expect.fail('a purged task must be gone');
    } catch (error) {
      expect((error as RpcError).code).to.equal(-32602);
    }
    const rest = await cliJson<{ tasks: JsonTask[] }>('list');
    expect(rest.tasks.map((task) => task.taskId)).to.deep.equal([live]);
    expect(await system.redis.zcard(`${system.prefix}:all-tasks`)).to.equal(1);
    await client.call('tasks/cancel', { taskId: live });
  });

  it('usage errors exit 2 and say what is accepted; an unreachable Redis exits 1 and says so', async () => {
    const badStatus = await cli('list', '--status', 'done');
    expect(badStatus.code).to.equal(2);
    expect(badStatus.err).to.include(
      "unknown status 'done'; use working, input_required, completed, failed, cancelled",
    );
    const noCutoff = await cli('purge');
    expect(noCutoff.code).to.equal(2);
    expect(noCutoff.err).to.include("required option '--older-than <duration>' not specified");
    const badDuration = await cli('purge', '--older-than', 'soon');
    expect(badDuration.code).to.equal(2);
    expect(badDuration.err).to.include("'soon' is not a duration");
    const unknown = await cli('frobnicate');
    expect(unknown.code).to.equal(2);

    let err = '';
    const code = await runCli(['overview'], {
      out: () => undefined,
      err: (text) => (err += text),
      env: { REDIS_URL: 'redis://:secret@127.0.0.1:1' },
    });
    expect(code).to.equal(1);
    // Which Redis, and why that one, comes first (issue 31): the password masked.
    expect(err).to.match(/^Redis: redis:\/\/:\*\*\*@127\.0\.0\.1:1 \(from REDIS_URL\)\n/);
    expect(err).to.match(/^error: Cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1: .*ECONNREFUSED/m);
  });

  it('runs as the mcpt binary with the environment of the other processes', async () => {
    // The repository's operator binary (apps/cli); node_modules/.bin/mcpt is the installable package's, which
    // exists only once `pnpm run pack` has built it (test/integration/package.test.ts covers that one).
    const child = spawn(join(repoRoot, 'apps', 'cli', 'bin', 'mcpt.mjs'), ['list', '--json', '--limit', '1'], {
      cwd: repoRoot,
      env: { ...process.env, REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, err).to.equal(0);
    const page = JSON.parse(out) as { tasks: JsonTask[] };
    expect(page.tasks).to.have.length(1);
    expect(page.tasks[0]?.status).to.be.oneOf(Object.values(TaskStatus));
  });

  it('says on stderr which Redis it reads: REDIS_URL, else that of a running mcpt start, else the default; stdout stays JSON (issue 31)', async () => {
    const given = await cli('overview', '--json');
    expect(given.code, given.err).to.equal(0);
    expect(given.redis).to.equal(`Redis: ${system.redisUrl} (from REDIS_URL)`);
    JSON.parse(given.out);

    const stateDir = mkdtempSync(join(tmpdir(), 'mcpt-state-'));
    try {
      const run = async (env: Record<string, string>) => {
        let out = '';
        let err = '';
        const code = await runCli(['overview', '--json'], {
          out: (text) => (out += text),
          err: (text) => (err += text),
          env: { MCPT_STATE_DIR: stateDir, ...env },
        });
        return withRedisLine(code, out, err);
      };
      // The note a running `mcpt start` leaves (this test process stands in for it: its pid is alive).
      writeStartState(
        {
          pid: process.pid,
          redis: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
          apiUrl: system.apiUrl,
          startedAt: new Date().toISOString(),
        },
        { MCPT_STATE_DIR: stateDir },
      );
      const started = await run({});
      expect(started.code, started.err).to.equal(0);
      expect(started.redis).to.equal(`Redis: ${system.redisUrl} (from mcpt start, pid ${process.pid})`);
      const overview = JSON.parse(started.out) as { tasks: { total: number } };
      expect(overview.tasks.total).to.be.greaterThan(0);
      // REDIS_URL still wins over the note.
      expect((await run({ REDIS_URL: 'redis://127.0.0.1:1' })).redis).to.equal(
        'Redis: redis://127.0.0.1:1 (from REDIS_URL)',
      );

      // A note whose process is gone (killed hard, no clean stop) is ignored.
      const gone = spawn(process.execPath, ['-e', '']);
      await new Promise((resolve) => gone.on('exit', resolve));
      writeStartState(
        { pid: gone.pid!, redis: { REDIS_URL: system.redisUrl }, apiUrl: system.apiUrl, startedAt: '' },
        { MCPT_STATE_DIR: stateDir },
      );
      const stale = await run({ REDIS_URL: 'redis://127.0.0.1:1', MCPT_STATE_DIR: stateDir });
      expect(stale.redis).to.equal('Redis: redis://127.0.0.1:1 (from REDIS_URL)');
      expect(chooseRedis({ MCPT_STATE_DIR: stateDir }).line).to.equal(
        'Redis: redis://127.0.0.1:6379 (the default: no REDIS_URL and no running mcpt start)',
      );
      // A clean stop removes only its own note.
      removeStartState(process.pid, { MCPT_STATE_DIR: stateDir });
      expect(existsSync(startStatePath({ MCPT_STATE_DIR: stateDir }))).to.equal(true);
      removeStartState(gone.pid!, { MCPT_STATE_DIR: stateDir });
      expect(existsSync(startStatePath({ MCPT_STATE_DIR: stateDir }))).to.equal(false);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  // A task of `shout` waits in the queue ext-shout, which no process of the system reads: nothing but the CLI
  // touches it or its session's event stream.
  it("cancel: a task waiting in an external consumer's queue is cancelled and its job removed, as by tasks/cancel", async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await owner.createTask('shout', { text: 'never' }))['taskId']);
    expect(await system.redis.exists(`${system.prefix}:ext-shout:${taskId}`)).to.equal(1);
    const run = await cli('cancel', taskId, '--yes');
    expect(run.code, run.err).to.equal(0);
    expect((await owner.call('tasks/get', { taskId }))['status']).to.equal('cancelled');
    expect(await system.redis.exists(`${system.prefix}:ext-shout:${taskId}`)).to.equal(0);
  });

  it('cancel: a job an api from before the catalog left in the shared queue is removed too', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await owner.createTask('shout', { text: 'never' }))['taskId']);
    // The same task's job as an earlier version queued it: in the shared queue, where no worker of this system
    // looks once started (it drains that queue only at start-up).
    const shared = createToolQueue(system.redis, system.prefix);
    try {
      await shared.add('shout', { taskId, tool: 'shout', arguments: { text: 'never' } }, toolJobOptions(taskId, true));
      expect(await system.redis.exists(`${system.prefix}:tools:${taskId}`)).to.equal(1);
      const run = await cli('cancel', taskId, '--yes');
      expect(run.code, run.err).to.equal(0);
      expect(await system.redis.exists(`${system.prefix}:tools:${taskId}`)).to.equal(0);
      expect(await system.redis.exists(`${system.prefix}:ext-shout:${taskId}`)).to.equal(0);
    } finally {
      await shared.close();
    }
  });

  it("cancel: the session's event stream keeps the installation's SESSION_IDLE_TTL_MS, read like the api and workers do", async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await owner.createTask('shout', { text: 'never' }))['taskId']);
    const run = await cliWithEnv({ SESSION_IDLE_TTL_MS: '120000' }, 'cancel', taskId, '--yes');
    // The cancel appended the task's status notification and restarted the stream's idle expiry: the CLI's.
    const ttl = await system.redis.pttl(`${system.prefix}:session:${String(owner.sessionId)}:events`);
    expect(ttl).to.be.within(1, 120_000);
    expect(run.code, run.err).to.equal(0);
  });
  it('cancel, retry and purge ask first: without a terminal and without --yes they refuse and change nothing; at a terminal only y goes ahead', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    // A task of `shout` waits in a queue nobody reads: it stays working until cancelled.
    const live = String((await owner.createTask('shout', { text: 'keep' }))['taskId']);
    const failed = String((await owner.createTask('wait', { seconds: 0, fail: true }))['taskId']);
    await owner.call('tasks/result', { taskId: failed });
    const statusOfOwn = async (taskId: string) => String((await owner.call('tasks/get', { taskId }))['status']);

    // No terminal (a script, CI): refused before anything is read, saying what to add.
    for (const args of [
      ['cancel', live],
      ['retry', failed],
      ['purge', '--older-than', '1ms'],
    ]) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.err, args.join(' ')).to.match(new RegExp(`^error: mcpt ${args[0]} changes state .*add --yes`));
    }
    expect(await statusOfOwn(live)).to.equal('working');
    expect(await statusOfOwn(failed)).to.equal('failed');
    expect(((await owner.call('tasks/list'))['tasks'] as JsonTask[]).length).to.equal(2);
    // A dry run changes nothing: it needs no answer.
    expect((await cli('purge', '--older-than', '1ms', '--dry-run')).code).to.equal(0);

    // At a terminal: the question names what would change; anything but y or yes changes nothing.
    const asked: string[] = [];
    const no = await cliAnswering('n', asked, 'cancel', live);
    expect(no.code).to.equal(1);
    expect(no.err).to.equal('error: Nothing changed: not confirmed.\n');
    expect(asked[0]).to.match(
      new RegExp(`^Cancel task ${live} \\(tool shout, owner session:\\S+, working\\)\\? \\[y/N\\] $`),
    );
    expect(await statusOfOwn(live)).to.equal('working');
    const yes = await cliAnswering('y', asked, 'cancel', live);
    expect(yes.code, yes.err).to.equal(0);
    expect(await statusOfOwn(live)).to.equal('cancelled');

    const retried = await cliAnswering('yes', asked, 'retry', failed);
    expect(retried.code, retried.err).to.equal(0);
    expect(asked.at(-1)).to.match(new RegExp(`^Run failed task ${failed} \\(tool wait, owner session:\\S+\\) again`));
    const purged = await cliAnswering('Y', asked, 'purge', '--older-than', '1ms');
    expect(purged.code, purged.err).to.equal(0);
    expect(asked.at(-1)).to.match(
      /^Delete [1-9]\d* terminal task\(s\) finished more than 1ms ago \(before \S+Z\)\? \[y\/N\] $/,
    );
    expect(purged.out).to.match(/^Purged [1-9]\d* terminal task\(s\)/);
  });

  it('the mcpt binary asks at a real terminal (a pseudo-terminal) and refuses on a pipe, even with an answer on it', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await owner.createTask('shout', { text: 'keep' }))['taskId']);
    const bin = join(repoRoot, 'apps', 'cli', 'bin', 'mcpt.mjs');
    const env = { ...process.env, REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix };

    const piped = await runChild(spawn(bin, ['cancel', taskId], { cwd: repoRoot, env }), (child) =>
      child.stdin?.end('y\n'),
    );
    expect(piped.code).to.equal(2);
    expect(piped.err).to.include('add --yes to cancel without asking');
    expect((await owner.call('tasks/get', { taskId }))['status']).to.equal('working');

    // util-linux `script` runs the command on a pseudo-terminal and copies its own stdin there: the prompt goes to the
    // terminal, and "y" typed after it answers.
    const terminal = spawn('script', ['-qec', 'exec "$MCPT_BIN" cancel "$MCPT_TASK"', '/dev/null'], {
      cwd: repoRoot,
      env: { ...env, SHELL: '/bin/sh', MCPT_BIN: bin, MCPT_TASK: taskId },
    });
    const answered = await runChild(terminal, async (child, screen) => {
      await eventually(() => (screen().includes('[y/N]') ? true : undefined), 15_000);
      child.stdin?.write('y\n');
    });
    expect(answered.code, answered.out).to.equal(0);
    expect(answered.out).to.match(new RegExp(`Cancel task ${taskId} \\(tool shout, .*\\[y/N\\]`));
    expect(answered.out).to.include(`Cancelled task ${taskId} (tool shout).`);
    expect((await owner.call('tasks/get', { taskId }))['status']).to.equal('cancelled');
  });
});

/**
 * Runs a child to its exit, with `drive` given the child and what it printed so far (stdout; a pseudo-terminal's
 * whole screen); kills it if driving fails.
 */
async function runChild(
  child: ChildProcess,
  drive: (child: ChildProcess, screen: () => string) => unknown,
): Promise<CliRun> {
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    await drive(child, () => out);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }
  const code = await exited;
  child.stdin?.end();
  return withRedisLine(code ?? -1, out, err);
}
