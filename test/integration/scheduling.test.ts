// Scheduling (docs/scheduling.md) with real workers (in the test's process; a process of its own for one a test kills) and Redis: a tool's global concurrency and rate
// limit hold across workers, retries wait with the tool's backoff and stop at a final error, a run longer than its
// timeoutMs fails, principals take turns (weighted, across api replicas), a per-principal cap holds tasks back
// visibly, a killed worker's slots come back, a Redis restart leaks no lease, and operators see it all. Limits are
// checked from the start and end times the tools themselves report.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { runCli } from '@mcp-tasks/cli';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { spawnWorker, type ChildHandle } from '../support/processes.ts';
import { scrape } from '../support/prometheus.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

const TOOLS = './test/fixtures/scheduling/tools.ts';
// Short locks: a killed worker's jobs (and their slots) come back within a few seconds. Not shorter: a lock that a
// loaded machine fails to renew in time lets a job run twice at once, which is at-least-once, not a broken limit.
const FAST_RECOVERY = { WORKER_LOCK_DURATION_MS: '3000', WORKER_STALLED_INTERVAL_MS: '1000', MCPT_TOOLS: TOOLS };
const ADMIN_TOKEN = 'scheduling-admin-token-0123456789';

/** The figures of docs/scheduling.md, printed when SCHEDULING_FIGURES is set (the tests assert limits, not times). */
function figure(what: string, value: unknown): void {
  if (process.env['SCHEDULING_FIGURES']) process.stderr.write(`figure: ${what}: ${JSON.stringify(value)}\n`);
}

interface Timed {
  start: number;
  end: number;
  pid: number;
  attempt: number;
}

async function finished(client: McpTestClient, taskId: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  return eventually(
    async () => {
      const task = await client.call('tasks/get', { taskId });
      return ['completed', 'failed', 'cancelled'].includes(String(task['status'])) ? task : undefined;
    },
    timeoutMs,
    100,
  );
}

async function report(client: McpTestClient, taskId: string): Promise<Timed> {
  const result = await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
  return result['structuredContent'] as Timed;
}

async function runAll(client: McpTestClient, tool: string, args: Record<string, unknown>, count: number) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(String((await client.createTask(tool, args))['taskId']));
  for (const id of ids) expect((await finished(client, id))['status'], id).to.equal('completed');
  return Promise.all(ids.map((id) => report(client, id)));
}

/** The most runs that overlapped at any moment. */
function mostAtOnce(runs: readonly Timed[]): number {
  const edges = runs.flatMap((run) => [
    { at: run.start, delta: 1 },
    { at: run.end, delta: -1 },
  ]);
  // An end and a start at the same millisecond do not overlap.
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (now += edge.delta));
  return most;
}

describe('scheduling: limits, retries, timeouts and fairness across real workers', function () {
  this.timeout(180_000);
  let system: System;
  let store: TaskStore;

  before(async () => {
    system = await startSystem({ apis: 1, workers: 3, env: { ...FAST_RECOVERY, ADMIN_TOKEN } });
    store = new TaskStore(system.redis, new KeySpace(system.prefix));
  });
  after(async () => {
    await system?.stop();
  });

  it('publishes each tool’s scheduling settings in the catalog', async () => {
    const raw = await system.redis.hget(`${system.prefix}:catalog:tools`, 'gpu');
    expect(JSON.parse(String(raw))).to.deep.include({ scheduling: { concurrency: 2 } });
  });

  it('concurrency 2: never more than 2 runs at once across 3 workers, from the tool’s own start and end times', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const runs = await runAll(client, 'gpu', { ms: 300 }, 10);
    figure('concurrency 2, 10 runs of 300 ms', {
      mostAtOnce: mostAtOnce(runs),
      processes: new Set(runs.map((run) => run.pid)).size,
      firstStartToLastEndMs: Math.max(...runs.map((run) => run.end)) - Math.min(...runs.map((run) => run.start)),
    });
    expect(mostAtOnce(runs)).to.equal(2);
  });

  it('a rate limit of 2 starts per 2 s holds across workers', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const starts = (await runAll(client, 'metered', {}, 6)).map((run) => run.start).sort((a, b) => a - b);
    figure(
      'rate limit 2 per 2 s, starts (ms after the first)',
      starts.map((start) => start - (starts[0] as number)),
    );
    // Unlimited, 6 runs on 3 workers start within a few ms; limited, the third start is a window after the first.
    for (let i = 0; i + 2 < starts.length; i++) {
      expect((starts[i + 2] as number) - (starts[i] as number), `starts ${i} and ${i + 2}`).to.be.at.least(1000);
    }
  });

  it('retries with exponential backoff capped by maxDelayMs; the task says which attempt failed, why and when the next starts', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask('flaky', { failures: 2 }))['taskId']);
    expect((await finished(client, taskId))['status']).to.equal('completed');
    expect((await report(client, taskId)).attempt).to.equal(3);
    const messages = (await store.inspect(taskId))?.history.map((entry) => entry.statusMessage ?? '') ?? [];
    figure(
      'retry messages',
      messages.filter((m) => m.startsWith('Attempt')),
    );
    expect(messages.find((m) => m.startsWith('Attempt 1 of 3 failed'))).to.match(
      /^Attempt 1 of 3 failed: run 1 broke\. Attempt 2 starts at \S+Z \(in 300 ms\)\.$/,
    );
    // 300 ms doubled is 600 ms, capped at 400 ms.
    expect(messages.find((m) => m.startsWith('Attempt 2 of 3 failed'))).to.match(
      /run 2 broke\. Attempt 3 starts at .* \(in 400 ms\)\.$/,
    );
  });

  it('stops retrying at the last attempt, and at once on a FinalError', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const spent = String((await client.createTask('flaky', { failures: 5 }))['taskId']);
    const final = String((await client.createTask('flaky', { final: true }))['taskId']);
    const spentTask = await finished(client, spent);
    expect(spentTask).to.include({ status: 'failed' });
    expect(spentTask['statusMessage']).to.match(/^Attempt 3 of 3 failed: .*run 3 broke\. No attempts left\.$/);
    const finalTask = await finished(client, final);
    expect(finalTask['statusMessage']).to.equal(
      'Attempt 1 of 3 failed: the input can never work. The error is final: no retry.',
    );
    const history = (await store.inspect(final))?.history ?? [];
    expect(history.filter((entry) => entry.statusMessage?.includes('starts at'))).to.have.length(0);
  });

  it('a run longer than timeoutMs is aborted and fails, saying so', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask('slow', { ms: 30_000 }))['taskId']);
    const task = await finished(client, taskId);
    expect(task).to.include({ status: 'failed' });
    expect(task['statusMessage']).to.equal('Attempt 1 of 1 timed out after 300 ms (timeoutMs)');
    await expectRpcError(
      client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } }),
      -32603,
      "Tool 'slow' failed: it ran longer than its timeoutMs (300 ms) and was aborted",
    );
  });

  it('a run that times out counts as a failed attempt and is retried under the tool’s policy, saying so', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask('stuck', {}))['taskId']);
    expect((await finished(client, taskId))['status']).to.equal('completed');
    expect((await report(client, taskId)).attempt).to.equal(2);
    const messages = (await store.inspect(taskId))?.history.map((entry) => entry.statusMessage ?? '') ?? [];
    expect(messages.find((m) => m.startsWith('Attempt 1 of 2'))).to.match(
      /^Attempt 1 of 2 timed out after 300 ms \(timeoutMs\)\. Attempt 2 starts at \S+Z \(in 100 ms\)\.$/,
    );
  });

  it('a tool’s maxRunningPerOwner holds a principal’s second run of it back, saying so; other tools and principals run', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const other = await McpTestClient.connect(system.apiUrl);
    const first = String((await owner.createTask('licensed', { ms: 60_000 }))['taskId']);
    await eventually(
      async () =>
        String((await owner.call('tasks/get', { taskId: first }))['statusMessage']).startsWith('Running on') ||
        undefined,
      20_000,
    );
    const second = String((await owner.createTask('licensed', { ms: 50 }))['taskId']);
    const held = await eventually(async () => {
      const task = await owner.call('tasks/get', { taskId: second });
      return String(task['statusMessage']).startsWith('Queued behind') ? task : undefined;
    }, 20_000);
    expect(held).to.include({ status: 'working' });
    expect(held['statusMessage']).to.equal(
      "Queued behind 1 of your own tasks of tool 'licensed': at most 1 of them run at once per requestor " +
        "(the tool's maxRunningPerOwner). It starts when one of them ends.",
    );
    // The cap is per tool and per principal.
    const otherTool = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
    const otherPrincipal = String((await other.createTask('licensed', { ms: 50 }))['taskId']);
    expect((await finished(owner, otherTool))['status']).to.equal('completed');
    expect((await finished(other, otherPrincipal))['status']).to.equal('completed');
    expect((await owner.call('tasks/get', { taskId: second }))['status']).to.equal('working');
    // The first one's end (here its cancellation) starts the held one.
    await owner.call('tasks/cancel', { taskId: first });
    expect((await finished(owner, second))['status']).to.equal('completed');
  });

  it('fairness: one principal queues 40, a second then queues 2, which finish long before the first one’s backlog', async () => {
    // Without auth each session is its own principal.
    const heavy = await McpTestClient.connect(system.apiUrl);
    const light = await McpTestClient.connect(system.apiUrl);
    const backlog = await Promise.all(
      Array.from({ length: 40 }, async () => String((await heavy.createTask('turns', { ms: 100 }))['taskId'])),
    );
    const lightArrived = Date.now();
    const late = [
      String((await light.createTask('turns', { ms: 100 }))['taskId']),
      String((await light.createTask('turns', { ms: 100 }))['taskId']),
    ];
    for (const id of late) expect((await finished(light, id))['status']).to.equal('completed');
    const lightEnd = Math.max(...(await Promise.all(late.map((id) => report(light, id)))).map((run) => run.end));
    for (const id of backlog) expect((await finished(heavy, id))['status']).to.equal('completed');
    const heavyRuns = await Promise.all(backlog.map((id) => report(heavy, id)));
    // Round robin: from the second principal's arrival to the end of its two tasks, the first one runs the task
    // running then, the head of its queue, then one per turn (3 or 4 in all, 4 measured), not its backlog (36).
    const between = heavyRuns.filter((run) => run.end > lightArrived && run.start < lightEnd).length;
    const after = heavyRuns.filter((run) => run.start >= lightEnd).length;
    const figures = `${between} ran meanwhile, ${after} still to start`;
    expect(between, `tasks of the first principal run while the second one’s waited (${figures})`).to.be.at.most(6);
    expect(
      after,
      `tasks of the first principal still to run when the second one’s were done (${figures})`,
    ).to.be.at.least(20);
    expect(mostAtOnce([...heavyRuns])).to.equal(1);
    figure('fairness', { lightDoneAfterArrivalMs: lightEnd - lightArrived, between, after });
  });

  it('operators see per tool running/limit, queued per principal, rate-limit waits, retries and timeouts: /metrics, mcpt overview, /admin', async () => {
    const metricsUrl = system.apiUrl.replace(/\/mcp$/, '/metrics');
    const a = await McpTestClient.connect(system.apiUrl);
    const b = await McpTestClient.connect(system.apiUrl);
    // Operators see a session owner by its label, never its id, which is the session's credential (issue 30).
    const labelOf = (client: McpTestClient) =>
      `session:sha256:${createHash('sha256').update(String(client.sessionId)).digest('hex').slice(0, 16)}`;
    const principalA = labelOf(a);
    const principalB = labelOf(b);
    const secrets = [String(a.sessionId), String(b.sessionId)];
    // One retry and one timeout of this test's own.
    const retried = String((await a.createTask('flaky', { failures: 1 }))['taskId']);
    const timedOut = String((await a.createTask('slow', { ms: 30_000 }))['taskId']);
    expect((await finished(a, retried))['status']).to.equal('completed');
    expect((await finished(a, timedOut))['status']).to.equal('failed');
    // Both gpu slots held by A, then one more of A's and two of B's wait.
    const holders = [
      String((await a.createTask('gpu', { ms: 60_000 }))['taskId']),
      String((await a.createTask('gpu', { ms: 60_000 }))['taskId']),
    ];
    for (const id of holders) {
      await eventually(
        async () =>
          String((await a.call('tasks/get', { taskId: id }))['statusMessage']).startsWith('Running on') || undefined,
        20_000,
      );
    }
    const waiting = [
      String((await a.createTask('gpu', { ms: 50 }))['taskId']),
      String((await b.createTask('gpu', { ms: 50 }))['taskId']),
      String((await b.createTask('gpu', { ms: 50 }))['taskId']),
    ];
    const gpu = { tool: 'gpu' };
    const metrics = await scrape(metricsUrl);
    const metricsText = await (await fetch(metricsUrl)).text();
    for (const secret of secrets) expect(metricsText).not.to.contain(secret);
    expect(metrics.value('mcpt_tool_running', gpu)).to.equal(2);
    expect(metrics.value('mcpt_tool_concurrency_limit', gpu)).to.equal(2);
    expect(metrics.value('mcpt_tool_queued', gpu)).to.equal(3);
    // The queue depth counts them as waiting, though BullMQ keeps them in its prioritized set (the fair order).
    expect(metrics.value('mcpt_queue_jobs', { state: 'waiting' })).to.be.at.least(3);
    expect(metrics.value('mcpt_tool_queued_by_principal', { ...gpu, principal: principalA })).to.equal(1);
    expect(metrics.value('mcpt_tool_queued_by_principal', { ...gpu, principal: principalB })).to.equal(2);
    expect(metrics.value('mcpt_tool_retries_total', { tool: 'flaky' })).to.be.at.least(1);
    expect(metrics.value('mcpt_tool_timeouts_total', { tool: 'slow' })).to.be.at.least(1);

    interface Row {
      tool: string;
      running: number;
      limit?: number;
      queued: number;
      queuedByPrincipal: Record<string, number>;
      counters: Record<string, number>;
    }
    const expectGpuRow = (rows: Row[], where: string) => {
      const row = rows.find((tool) => tool.tool === 'gpu');
      expect(row, where).to.deep.include({ running: 2, limit: 2, queued: 3 });
      expect(row?.queuedByPrincipal, where).to.deep.equal({ [principalA]: 1, [principalB]: 2 });
      expect(rows.find((tool) => tool.tool === 'flaky')?.counters['retries'], where).to.be.at.least(1);
    };
    let out = '';
    let err = '';
    const code = await runCli(['overview', '--json'], {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code, err).to.equal(0);
    const overview = JSON.parse(out) as { tools: Row[]; jobs: { waiting: number } };
    expectGpuRow(overview.tools, 'mcpt overview');
    expect(overview.jobs.waiting, 'mcpt overview').to.be.at.least(3);
    expect(out, 'mcpt overview').to.not.include('prioritized');
    const admin = await fetch(system.apiUrl.replace(/\/mcp$/, '/admin/api/overview'), {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(admin.status).to.equal(200);
    const adminText = await admin.text();
    const adminOverview = JSON.parse(adminText) as { tools: Row[]; jobs: { waiting: number } };
    expectGpuRow(adminOverview.tools, '/admin/api/overview');
    expect(adminOverview.jobs.waiting, '/admin/api/overview').to.be.at.least(3);
    for (const secret of secrets) expect(out + adminText).not.to.contain(secret);
    // The dashboard's depth chart: a read takes a sample of the current minute first (which may have just ended).
    const activity = await fetch(system.apiUrl.replace(/\/mcp$/, '/admin/api/activity'), {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const depth = ((await activity.json()) as { depth: { waiting: (number | null)[] } }).depth;
    expect(Math.max(...depth.waiting.slice(-2).map((n) => n ?? 0)), '/admin/api/activity').to.be.at.least(3);

    // A rate limit spent shows as a wait (2 starts per 2 s; 6 calls keep it spent for about 4 s).
    const metered = await Promise.all(
      Array.from({ length: 6 }, async () => String((await a.createTask('metered', {}))['taskId'])),
    );
    const wait = await eventually(async () => {
      const seconds = (await scrape(metricsUrl)).value('mcpt_tool_rate_limit_wait_seconds', { tool: 'metered' });
      return seconds > 0 ? seconds : undefined;
    }, 30_000);
    expect(wait).to.be.at.most(2);
    for (const id of metered) expect((await finished(a, id))['status']).to.equal('completed');
    for (const id of holders) await a.call('tasks/cancel', { taskId: id });
    for (const [i, id] of waiting.entries())
      expect((await finished(i === 0 ? a : b, id))['status']).to.equal('completed');
  });

  it('a worker killed while holding both slots of a tool gives them back (stalled-job recovery)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const doomed = await killableWorker(system);
    // Only the new worker serves gpu for now: the others stop taking its jobs.
    const others = system.workers.filter((worker) => worker !== doomed);
    await Promise.all(others.map((worker) => worker.stop()));
    const holding = [
      String((await client.createTask('gpu', { ms: 60_000 }))['taskId']),
      String((await client.createTask('gpu', { ms: 60_000 }))['taskId']),
    ];
    for (const id of holding) {
      await eventually(async () => {
        const task = await client.call('tasks/get', { taskId: id });
        return String(task['statusMessage']).startsWith('Running on') ? true : undefined;
      }, 20_000);
    }
    const queued = String((await client.createTask('gpu', { ms: 50 }))['taskId']);
    const killedAt = Date.now();
    await doomed.stop('SIGKILL');
    await system.addWorker();
    // Both slots came back: the two interrupted runs start again on the new worker (they are retry-safe and were
    // queued first)...
    for (const id of holding) {
      await eventually(async () => {
        const history = (await store.inspect(id))?.history ?? [];
        return history.filter((entry) => entry.statusMessage?.startsWith('Running on')).length === 2 || undefined;
      }, 30_000);
    }
    figure(
      'killed worker: both slots running again (ms after the kill, a new worker started meanwhile)',
      Date.now() - killedAt,
    );
    expect((await client.call('tasks/get', { taskId: queued }))['status']).to.equal('working');
    // ...and once they are cancelled, the queued task gets a slot.
    for (const id of holding) await client.call('tasks/cancel', { taskId: id });
    expect((await finished(client, queued, 30_000))['status']).to.equal('completed');
    expect(await system.redis.llen(`${system.prefix}:tool-gpu:active`)).to.be.at.most(2);
  });
});

// An operator's override, as every process of the installation gets it.
const OVERRIDE = JSON.stringify({
  tools: {
    gpu: { concurrency: 3 },
    flaky: { retry: { attempts: 4, backoff: { type: 'fixed', delayMs: 50 } } },
    '*': { timeoutMs: 120_000 },
  },
});

describe('scheduling: MAX_RUNNING_PER_OWNER holds a principal’s extra tasks back, visibly, without leaks', function () {
  this.timeout(120_000);
  let system: System;

  before(async () => {
    system = await startSystem({
      apis: 1,
      workers: 2,
      // A sweep a second: a held task whose principal's slot is (wrongly) free starts within a second.
      env: { ...FAST_RECOVERY, MAX_RUNNING_PER_OWNER: '1', SCHEDULING: OVERRIDE, OWNER_CAP_RECHECK_MS: '1000' },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('an operator’s SCHEDULING override is in force (catalog and queue) and a worker given another one is refused', async () => {
    const raw = await system.redis.hget(`${system.prefix}:catalog:tools`, 'gpu');
    expect(JSON.parse(String(raw))).to.deep.include({ scheduling: { concurrency: 3, timeoutMs: 120_000 } });
    expect(await system.redis.hget(`${system.prefix}:tool-gpu:meta`, 'concurrency')).to.equal('3');
    let refused: unknown;
    await system.addWorker({ SCHEDULING: '{}' }).catch((error: unknown) => (refused = error));
    expect(String(refused)).to.match(/Tool '\w+' is already served with a different definition/);
  });

  it('an operator’s retry (mcpt retry) queues the new task with the tool’s scheduling: all its attempts again', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const spent = String((await client.createTask('flaky', { failures: 9 }))['taskId']);
    const noAttemptsLeft = /^Attempt 4 of 4 failed: .*run 4 broke\. No attempts left\.$/;
    expect((await finished(client, spent))['statusMessage']).to.match(noAttemptsLeft);
    let out = '';
    let err = '';
    const code = await runCli(['retry', spent, '--json', '--yes'], {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code, err).to.equal(0);
    const fresh = (JSON.parse(out) as { task: { taskId: string } }).task.taskId;
    // Without the tool's scheduling, BullMQ would give the new job 3 attempts, not the tool's 4.
    expect((await finished(client, fresh))['statusMessage']).to.match(noAttemptsLeft);
  });

  it('runs one task per principal at once; the others say they are queued behind it; another principal is not held', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const other = await McpTestClient.connect(system.apiUrl);
    const first = String((await owner.createTask('gpu', { ms: 1500 }))['taskId']);
    await eventually(
      async () =>
        String((await owner.call('tasks/get', { taskId: first }))['statusMessage']).startsWith('Running on') ||
        undefined,
    );
    const second = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
    const held = await eventually(async () => {
      const task = await owner.call('tasks/get', { taskId: second });
      return String(task['statusMessage']).startsWith('Queued behind') ? task : undefined;
    });
    expect(held).to.include({ status: 'working' });
    expect(held['statusMessage']).to.match(/^Queued behind 1 of your own tasks: at most 1 .*MAX_RUNNING_PER_OWNER/);
    // Another principal's task runs meanwhile (gpu has two global slots).
    const theirs = String((await other.createTask('gpu', { ms: 50 }))['taskId']);
    expect((await finished(other, theirs))['status']).to.equal('completed');
    expect((await owner.call('tasks/get', { taskId: first }))['status']).to.equal('working');
    // When the first ends, the held one starts.
    const runs = await Promise.all(
      [first, second].map(async (id) => {
        expect((await finished(owner, id))['status']).to.equal('completed');
        return report(owner, id);
      }),
    );
    expect(runs[1]?.start).to.be.at.least(runs[0]?.end ?? Infinity);
  });

  it('a run longer than twice the lease keeps its principal’s slot, and the held task says so once, not per sweep', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    // The lease is WORKER_LOCK_DURATION_MS (3 s here); the renewals must keep the principal's runs for 9 s.
    const long = String((await owner.createTask('gpu', { ms: 9000 }))['taskId']);
    await eventually(
      async () =>
        String((await owner.call('tasks/get', { taskId: long }))['statusMessage']).startsWith('Running on') ||
        undefined,
      20_000,
    );
    const next = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
    // Held back, it waits among the queue's delayed jobs and is counted apart (docs/observability.md, "Queue depth"):
    // each sweep starts it again for a moment, hence the eventually.
    const metricsUrl = system.apiUrl.replace(/\/mcp$/, '/metrics');
    await eventually(async () => {
      const metrics = await scrape(metricsUrl);
      return metrics.value('mcpt_queue_jobs_held') === 1 &&
        metrics.value('mcpt_queue_jobs', { state: 'delayed' }) >= 1 &&
        metrics.value('mcpt_tool_delayed', { tool: 'gpu' }) >= 1
        ? true
        : undefined;
    }, 6000);
    const runs = await Promise.all(
      [long, next].map(async (id) => {
        expect((await finished(owner, id))['status']).to.equal('completed');
        return report(owner, id);
      }),
    );
    expect(runs[1]?.start, 'the held task started before the long run ended').to.be.at.least(runs[0]?.end ?? Infinity);
    figure(
      'cap 1, a 9 s run (3 s lease): the held task started (ms after the run ended)',
      (runs[1]?.start ?? 0) - (runs[0]?.end ?? 0),
    );
    // Every sweep (each second, on each worker) starts the held job again and holds it back again: the task's
    // history and its client's stream get one note, not one per sweep.
    const history = (await new TaskStore(system.redis, new KeySpace(system.prefix)).inspect(next))?.history ?? [];
    expect(history.filter((entry) => entry.statusMessage?.startsWith('Queued behind'))).to.have.length(1);
  });

  it('a worker killed while running a principal’s task gives its slot back: the principal’s next task starts', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const doomed = await killableWorker(system);
    const others = system.workers.filter((worker) => worker !== doomed);
    await Promise.all(others.map((worker) => worker.stop()));
    const running = String((await owner.createTask('gpu', { ms: 60_000 }))['taskId']);
    await eventually(
      async () =>
        String((await owner.call('tasks/get', { taskId: running }))['statusMessage']).startsWith('Running on') ||
        undefined,
      20_000,
    );
    await doomed.stop('SIGKILL');
    // Cancelled while its worker is dead: its run will not come back, so only its lease can have held the slot.
    await owner.call('tasks/cancel', { taskId: running });
    await system.addWorker();
    const next = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
    expect((await finished(owner, next, 30_000))['status']).to.equal('completed');
  });
});

describe('scheduling: a Redis restart (AOF) leaks no per-requestor lease and leaves no task held', function () {
  this.timeout(180_000);
  let redisServer: RedisServer;
  let system: System;

  before(async () => {
    redisServer = await startRedisServer({ aof: true });
    system = await startSystem({
      redisUrl: redisServer.url,
      apis: 1,
      workers: 2,
      env: { ...FAST_RECOVERY, MAX_RUNNING_PER_OWNER: '1', OWNER_CAP_RECHECK_MS: '1000' },
    });
  });
  after(async () => {
    await system?.stop();
    await redisServer?.stop();
  });

  it('a tool’s global limits lost from Redis (a restart without persistence) are applied again by its workers', async () => {
    const meta = `${system.prefix}:tool-gpu:meta`;
    expect(await system.redis.hget(meta, 'concurrency')).to.equal('2');
    await system.redis.hdel(meta, 'concurrency');
    // Every worker serving the tool applies its settings again at each catalog heartbeat (CATALOG_HEARTBEAT_MS, 5 s).
    await eventually(async () => ((await system.redis.hget(meta, 'concurrency')) === '2' ? true : undefined), 30_000);
  });

  it('a lease Redis lost while its run goes on (the last second before a kill, AOF everysec) is written again by the run’s worker', async () => {
    const owner = await McpTestClient.connect(system.apiUrl);
    const principal = `session:${String(owner.sessionId)}`;
    const runs = new KeySpace(system.prefix).ownerRuns(principal);
    const running = String((await owner.createTask('gpu', { ms: 8000 }))['taskId']);
    await eventually(async () => ((await system.redis.zcard(runs)) === 1 ? true : undefined), 20_000);
    await system.redis.del(runs);
    await eventually(async () => ((await system.redis.zcard(runs)) === 1 ? true : undefined), 20_000);
    const next = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
    const reports = await Promise.all(
      [running, next].map(async (id) => {
        expect((await finished(owner, id, 60_000))['status']).to.equal('completed');
        return report(owner, id);
      }),
    );
    expect(reports[1]?.start, 'the next task started beside the run').to.be.at.least(reports[0]?.end ?? Infinity);
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`Redis ${signal} + restart with a principal’s run going and one held: the held one starts after it, then nothing is held`, async () => {
      const owner = await McpTestClient.connect(system.apiUrl);
      const principal = `session:${String(owner.sessionId)}`;
      const keys = new KeySpace(system.prefix);
      const running = String((await owner.createTask('gpu', { ms: 6000 }))['taskId']);
      await eventually(
        async () =>
          String((await owner.call('tasks/get', { taskId: running }))['statusMessage']).startsWith('Running on') ||
          undefined,
        20_000,
      );
      const held = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
      await eventually(
        async () =>
          String((await owner.call('tasks/get', { taskId: held }))['statusMessage']).startsWith('Queued behind') ||
          undefined,
        20_000,
      );
      // AOF everysec: what was written more than a second before a kill is on disk.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const down = Date.now();
      await redisServer.restart(signal);
      const downMs = Date.now() - down;

      const runs = await Promise.all(
        [running, held].map(async (id) => {
          expect((await finished(owner, id, 90_000))['status'], id).to.equal('completed');
          return report(owner, id);
        }),
      );
      expect(runs[1]?.start, 'the held task started beside the running one').to.be.at.least(runs[0]?.end ?? Infinity);
      figure(`Redis ${signal}`, {
        downMs,
        runAttempt: runs[0]?.attempt,
        heldStartedAfterRunEndMs: (runs[1]?.start ?? 0) - (runs[0]?.end ?? 0),
      });
      // No lease outlives its run and nothing stays parked: the principal's caps are whole again.
      await eventually(async () => {
        const now = String(Date.now());
        const leases = await system.redis.zcount(keys.ownerRuns(principal), now, '+inf');
        const parked = await system.redis.zcard(keys.ownerParked(principal));
        const listed = await system.redis.sismember(keys.parkedOwners(), principal);
        return leases === 0 && parked === 0 && listed === 0 ? true : undefined;
      }, 30_000);
      // The principal's next task runs at once, without being held.
      const next = String((await owner.createTask('gpu', { ms: 50 }))['taskId']);
      expect((await finished(owner, next, 30_000))['status']).to.equal('completed');
      const history = (await new TaskStore(system.redis, keys).inspect(next))?.history ?? [];
      expect(history.filter((entry) => entry.statusMessage?.startsWith('Queued behind'))).to.have.length(0);
      expect(await system.redis.hget(`${system.prefix}:tool-gpu:meta`, 'concurrency')).to.equal('2');
    });
  }
});

describe('scheduling: weights between principals, across two api replicas', function () {
  this.timeout(180_000);
  const ALICE_KEY = 'alice-scheduling-key-0123456789';
  const BOB_KEY = 'bob-scheduling-key-0123456789';
  let system: System;

  before(async () => {
    system = await startSystem({
      apis: 2,
      workers: 2,
      env: {
        ...FAST_RECOVERY,
        AUTH_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY}`,
        // Weights name principals as tasks' owners do (mcpt list): an API key's is principal:key:<name>.
        SCHEDULING: JSON.stringify({ weights: { 'principal:key:bob': 3 } }),
      },
    });
  });
  after(async () => {
    await system?.stop();
  });

  async function connectAs(url: string, token: string): Promise<McpTestClient> {
    const client = new McpTestClient(url);
    client.headers = { authorization: `Bearer ${token}` };
    await client.initialize('2025-11-25', {});
    return client;
  }

  it('a principal of weight 3 starts three tasks per turn of a principal of weight 1, queued through another replica', async () => {
    const alice = await connectAs(String(system.apis[0]?.url), ALICE_KEY);
    const bob = await connectAs(String(system.apis[1]?.url), BOB_KEY);
    const queue = (client: McpTestClient) =>
      Promise.all(
        Array.from({ length: 20 }, async () => String((await client.createTask('turns', { ms: 100 }))['taskId'])),
      );
    const aliceIds = await queue(alice);
    const bobIds = await queue(bob);
    const runsOf = async (client: McpTestClient, ids: string[]) => {
      for (const id of ids) expect((await finished(client, id))['status']).to.equal('completed');
      return Promise.all(ids.map((id) => report(client, id)));
    };
    const aliceRuns = await runsOf(alice, aliceIds);
    const bobRuns = await runsOf(bob, bobIds);
    const bobFirst = Math.min(...bobRuns.map((run) => run.start));
    const bobLast = Math.max(...bobRuns.map((run) => run.start));
    // Weight 3: Alice's jobs sit 12 priority steps apart, Bob's 4, so about 7 of hers start while his 20 do; at
    // equal weights they would alternate (about 20).
    const between = aliceRuns.filter((run) => run.start > bobFirst && run.start < bobLast).length;
    figure('weights: of alice (weight 1) started while bob’s 20 (weight 3) did', between);
    expect(between, `tasks of alice started between bob’s first and last`).to.be.at.most(12);
    expect(mostAtOnce([...aliceRuns, ...bobRuns])).to.equal(1);
  });
});

/** A worker of the system in a process of its own, for a test that kills it (the others run in this process). */
async function killableWorker(system: System): Promise<ChildHandle> {
  const worker = await spawnWorker(system.env);
  system.workers.push(worker);
  return worker;
}
