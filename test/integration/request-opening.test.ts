// A request of a session its api replica knows is opened (session check, idle timer, rate-limit count) by the
// method's own script when the method starts with one: a task-augmented tools/call (create-task-6.lua) and
// tasks/result, tasks/get and tasks/cancel (get-owned-1.lua) cost one script call of ours each for their read (issues
// 16 and 41), and every refusal of the session gate still comes back: 404 for a session that is gone, -32029 over a
// rate limit, with nothing created, read or cancelled.
// Own redis-server (INFO commandstats counts only this file's work); no worker: a tool is published by the test.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createEngine, type Engine, TaskKeys } from '@mcp-tasks/engine';
import { cancelledSettlement, toolQueueName } from '@mcp-tasks/protocol';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';
import { commandsDuring, monitoredDuring, type SeenCommand } from '../support/command-stats.ts';

const TOOL = 'noop';
/** RATE_LIMIT_PER_ADDRESS: every client of this file shares the address, and the last test spends it. */
const PER_ADDRESS = 80;

describe('opening a request in the method’s own script (own redis-server, no worker)', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let system: System;
  let inspect: Redis;
  let engine: Engine;
  const releases: (() => Promise<void>)[] = [];

  before(async () => {
    server = await startRedisServer();
    system = await startSystem({
      redisUrl: server.url,
      workers: 0,
      env: {
        RATE_LIMIT_WINDOW_MS: '60000',
        RATE_LIMIT_FAILED_LOOKUPS: '3',
        RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
        // No periodic re-check of a waiting request within a test: each read a test counts is a wake-up's.
        RESULT_RECHECK_MS: '600000',
      },
    });
    inspect = new Redis(server.url, { maxRetriesPerRequest: null });
    releases.push(track('request-opening inspect', () => inspect.disconnect()));
    engine = createEngine({ redis: inspect }, { REDIS_PREFIX: system.prefix, SESSION_IDLE_TTL_MS: 3_600_000 });
    releases.push(() => engine.close());
    // The tool a worker would publish; its jobs wait in its queue (no worker runs them).
    await engine.catalog.publish([
      {
        name: TOOL,
        description: 'does nothing',
        inputSchema: { type: 'object' },
        taskSupport: 'optional',
        retrySafe: true,
        queue: toolQueueName(TOOL),
        external: false,
      },
    ]);
  });
  after(async () => {
    for (const release of releases.reverse()) await release();
    await system?.stop();
    await server?.stop();
  });

  const commandsOf = (body: () => Promise<unknown>) => commandsDuring(inspect, body);

  /** Script calls: EVALSHA, or EVAL the first time a connection runs a script (ioredis). */
  const scripts = (calls: Record<string, number>) => (calls['evalsha'] ?? 0) + (calls['eval'] ?? 0);

  const tasksCreated = () => inspect.zcard(new TaskKeys(engine.keys).allTasks());
  /** The tool's queued jobs (no worker takes them): the create script adds each task's job in its step. */
  const jobsQueued = () => engine.externalQueues.get(toolQueueName(TOOL)).count();

  it('T-CREATE-1, T-RES-2: a task-augmented tools/call is one script of ours, which adds the job too; tasks/result one script', async () => {
    // initialize, then notifications/initialized: the replica knows the session from then on.
    const client = await McpTestClient.connect(system.apiUrl);
    await client.createTask(TOOL, {});
    let taskId = '';
    const create = await commandsOf(async () => (taskId = String((await client.createTask(TOOL, {}))['taskId'])));
    // The gate's work (PEXPIRE of the session, INCR of the rate buckets) and the job's add (invariant 2) ran inside
    // create-task-6.lua.
    expect(scripts(create), JSON.stringify(create)).to.equal(1);
    expect(await engine.externalQueues.get(toolQueueName(TOOL)).getJobState(taskId)).to.equal('prioritized');
    const record = await engine.store.get(taskId);
    await engine.store.settle(record!, cancelledSettlement());
    const result = await commandsOf(() =>
      client.rpc('tasks/result', { taskId }, { headers: { accept: 'application/json' } }),
    );
    expect(scripts(result), JSON.stringify(result)).to.equal(1);
    // The record's read; the session's fields are not read again (the replica holds them).
    expect(result['hgetall'], JSON.stringify(result)).to.equal(1);
  });

  it('T-RES-2: a waiting tasks/result reads the task again with one HGETALL when woken, not with the owner-checking script', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask(TOOL, {}))['taskId']);
    const record = new TaskKeys(engine.keys).record(taskId);
    // JSON only: the request blocks until the task ends (no worker runs it: the test ends it).
    const answer = client.rpc('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
    // Waiting once its read has named this replica among the task's waiters and it holds its stream slot (taken
    // after the read, with a script of its own that is no part of what is counted).
    const slots = engine.keys.sessionConnections(String(client.sessionId));
    for (let i = 0; !(await inspect.hget(record, 'waiters')) || (await inspect.zcard(slots)) === 0; i++) {
      if (i > 600) throw new Error('tasks/result never registered as a waiter');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const calls = await commandsOf(async () => {
      await engine.store.settle((await engine.store.get(taskId))!, cancelledSettlement());
      await answer;
    });
    // The test's own read (HGETALL) and transition (one script), then the woken request's read: one more
    // HGETALL (or more, should the periodic re-check also fire), and no get-owned-1.lua (its HGET of the owner).
    expect(calls['hget'] ?? 0, JSON.stringify(calls)).to.equal(0);
    expect(calls['hgetall'] ?? 0, JSON.stringify(calls)).to.be.at.least(2);
    expect(scripts(calls), JSON.stringify(calls)).to.equal(1);
  });

  it('T-RES-2, T-INPUT-3: an answer stream reads its task again with one HGETALL, not with the owner-checking script', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const created = await client.createTask(TOOL, {});
    const taskId = String(created['taskId']);
    const sessionId = String(client.sessionId);
    // SSE accepted: a task still running after RESULT_STREAM_AFTER_MS is answered on a stream, which holds a lease.
    const answer = client.rpc('tasks/result', { taskId });
    await eventually(async () => (await inspect.zcard(engine.keys.answerStreamLeases(sessionId))) || undefined, 30_000);
    const calls = await commandsOf(async () => {
      await engine.store.settle((await engine.store.get(taskId))!, cancelledSettlement());
      const reply = await answer;
      expect(reply.error?.code, JSON.stringify(reply)).to.equal(-32800);
    });
    // The stream's reads of the task (its first one, the woken one, any re-check) are HGETALLs: no HGET of the owner.
    expect(calls['hget'] ?? 0, JSON.stringify(calls)).to.equal(0);
    expect(calls['hgetall'] ?? 0, JSON.stringify(calls)).to.be.at.least(2);
  });

  it('T-SEC-3, invariant 2: a session gone since the replica last saw it gets 404 from tools/call and tasks/result, and nothing is created, no job either', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const task = await client.createTask(TOOL, {});
    const before = await tasksCreated();
    const jobs = await jobsQueued();
    // As if it expired (or was deleted through another replica): the replica still holds its fields.
    await inspect.del(engine.keys.session(String(client.sessionId)));
    const created = await client.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: TOOL, arguments: {}, task: {} },
    });
    expect(created.status).to.equal(404);
    expect(await tasksCreated()).to.equal(before);
    expect(await jobsQueued()).to.equal(jobs);
    const read = await client.post({
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/result',
      params: { taskId: task['taskId'] },
    });
    expect(read.status).to.equal(404);
    // Nothing was counted for the gone session.
    expect(await inspect.exists(engine.keys.session(String(client.sessionId)))).to.equal(0);
  });

  it('T-RES-2: a plain tools/call is written watched, woken without a read first, and read and deleted in one script once it ended', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    await client.createTask(TOOL, {});
    const filed = engine.keys.sessionCalls(String(client.sessionId));
    let taskId: string | undefined;
    const calls = await commandsOf(async () => {
      // JSON only: the request blocks until the call ends (no worker runs it: the test ends it).
      const answer = client.rpc(
        'tools/call',
        { name: TOOL, arguments: {} },
        { headers: { accept: 'application/json' } },
      );
      for (let i = 0; taskId === undefined; i++) {
        if (i > 600) throw new Error('the plain call was never filed under its request id');
        [taskId] = await inspect.hvals(filed);
        if (taskId === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await engine.store.settle((await engine.store.get(taskId))!, cancelledSettlement());
      await answer;
    });
    // The request's opening and its stream slot (JSON only: it holds a slot, so it opens first), the create step,
    // the test's transition, and the woken request's take-ended-13.lua; no get-owned-1.lua before the wait (the
    // create named the replica among the record's waiters), no read and then a delete after it.
    expect(scripts(calls), JSON.stringify(calls)).to.equal(5);
    // The call's entry by request id went in with the record, in the create step: no MULTI of its own (issue 41).
    expect(calls['multi'] ?? 0, JSON.stringify(calls)).to.equal(0);
    expect(await inspect.exists(new TaskKeys(engine.keys).record(String(taskId)))).to.equal(0);
    expect(await inspect.hlen(filed)).to.equal(0);
  });

  it('T-SEC-3, invariant 2: a session gone since the replica last saw it gets 404 from a plain tools/call too (its create step opens it), and nothing is created', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    await client.createTask(TOOL, {});
    const before = await tasksCreated();
    const jobs = await jobsQueued();
    await inspect.del(engine.keys.session(String(client.sessionId)));
    // With SSE accepted (the default), as a task's create, the plain call's is the step that opens the request.
    const created = await client.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: TOOL, arguments: {} },
    });
    expect(created.status).to.equal(404);
    expect(await tasksCreated()).to.equal(before);
    expect(await jobsQueued()).to.equal(jobs);
    expect(await inspect.exists(engine.keys.sessionCalls(String(client.sessionId)))).to.equal(0);
  });

  /** What a request sent and waited for (its round trips: each command not run by a script), and what scripts ran. */
  const split = (seen: SeenCommand[]) => ({
    sent: seen.filter((command) => command.source !== 'lua').map((command) => command.name),
    scripted: seen.filter((command) => command.source === 'lua').map((command) => command.name),
  });
  const statusOf = async (taskId: string) => (await engine.store.get(taskId))?.status;

  it('T-SEC-3, T-GET-1: tasks/get of a known session is one round trip: its read opens the request (session timer, rate count)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask(TOOL, {}))['taskId']);
    const session = engine.keys.session(String(client.sessionId));
    await inspect.pexpire(session, 1000);
    let reply: Awaited<ReturnType<McpTestClient['rpc']>> | undefined;
    const seen = split(await monitoredDuring(inspect, async () => (reply = await client.rpc('tasks/get', { taskId }))));
    expect(reply?.result?.['taskId'], JSON.stringify(reply)).to.equal(taskId);
    // One script, no touch-session-6.lua before it: the session's timer and the rate buckets are in its step. (The
    // replica's own background reads, the catalog's, may fall in the window too: only scripts are counted.)
    expect(seen.sent.filter((name) => name === 'evalsha').length, JSON.stringify(seen)).to.equal(1);
    expect(seen.scripted, JSON.stringify(seen)).to.include.members(['pexpire', 'incr', 'hgetall']);
    // The session's idle timer was restarted (SESSION_IDLE_TTL_MS), by that one step.
    expect(await inspect.pttl(session)).to.be.above(10_000);
  });

  it('T-SEC-3, T-CANCEL-2: tasks/cancel of a known session opens its request in its first read, with no round trip of the gate', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask(TOOL, {}))['taskId']);
    let reply: Awaited<ReturnType<McpTestClient['rpc']>> | undefined;
    const seen = await monitoredDuring(inspect, async () => (reply = await client.rpc('tasks/cancel', { taskId })));
    expect(reply?.result?.['status'], JSON.stringify(reply)).to.equal('cancelled');
    // The first command of the request is the read that opens it: the session's PEXPIRE and the rate count, then the
    // owner's HGET (the gate's own script, which reads no record, would come first otherwise).
    const first = seen.findIndex((command) => command.source !== 'lua');
    const firstScript = seen.slice(first + 1).findIndex((command) => command.source !== 'lua');
    const ran = seen.slice(first + 1, firstScript < 0 ? undefined : first + 1 + firstScript).map((c) => c.name);
    expect(seen[first]?.name, JSON.stringify(seen)).to.equal('evalsha');
    expect(ran, JSON.stringify(seen)).to.include.members(['pexpire', 'incr', 'hget', 'hgetall']);
    expect(await statusOf(taskId)).to.equal('cancelled');
  });

  it('T-SEC-3, T-SEC-1: a session gone since the replica last saw it gets 404 from tasks/get and tasks/cancel, which read and cancel nothing', async () => {
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const client = await McpTestClient.connect(system.apiUrl);
      const taskId = String((await client.createTask(TOOL, {}))['taskId']);
      await inspect.del(engine.keys.session(String(client.sessionId)));
      let status = 0;
      const seen = split(
        await monitoredDuring(inspect, async () => {
          status = (await client.post({ jsonrpc: '2.0', id: 1, method, params: { taskId } })).status;
        }),
      );
      expect(status, method).to.equal(404);
      // The request's one script found the session gone (its PEXPIRE) and stopped: no record was read.
      expect(seen.sent.filter((name) => name === 'evalsha').length, JSON.stringify(seen)).to.equal(1);
      expect(seen.scripted, JSON.stringify(seen)).to.deep.equal(['pexpire']);
      expect(seen.sent, JSON.stringify(seen)).to.not.include.members(['hget']);
      expect(seen.sent, JSON.stringify(seen)).to.not.include.members(['hgetall']);
      expect(await statusOf(taskId), method).to.equal('working');
      // Nothing was counted for the gone session.
      expect(await inspect.exists(engine.keys.session(String(client.sessionId)))).to.equal(0);
    }
  });

  it('T-SEC-3, T-CANCEL-2: a tasks/cancel refused by a rate limit (-32029) as its read opens it cancels nothing', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask(TOOL, {}))['taskId']);
    // This session's failed-lookup budget (RATE_LIMIT_FAILED_LOOKUPS 3 a window) spent on unknown ids.
    const codes: number[] = [];
    for (let i = 0; i < 8 && !codes.includes(-32029); i++) {
      codes.push((await client.rpc('tasks/get', { taskId: randomUUID() })).error?.code ?? 0);
    }
    expect(codes.at(-1)).to.equal(-32029);
    let reply: Awaited<ReturnType<McpTestClient['rpc']>> | undefined;
    const seen = await monitoredDuring(inspect, async () => (reply = await client.rpc('tasks/cancel', { taskId })));
    expect(reply?.error?.code, JSON.stringify(reply)).to.equal(-32029);
    // One script: the opening refused the request before its read (no HGET of the owner, no transition).
    expect(split(seen).sent.filter((name) => name === 'evalsha').length, JSON.stringify(seen)).to.equal(1);
    expect(
      seen.map((command) => command.name),
      JSON.stringify(seen),
    ).to.not.include.members(['hget']);
    expect(await statusOf(taskId)).to.equal('working');
  });

  it('T-RES-2, T-INPUT-3: tasks/result of an unfinished task reads where its session’s events stand in its one script', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const taskId = String((await client.createTask(TOOL, {}))['taskId']);
    const sessionId = String(client.sessionId);
    // SSE accepted: the answer may turn into a stream of the session's events, which starts where they stand.
    let answer: Promise<unknown> | undefined;
    const seen = await monitoredDuring(inspect, async () => {
      answer = client.rpc('tasks/result', { taskId });
      await eventually(
        async () => (await inspect.zcard(engine.keys.answerStreamLeases(sessionId))) || undefined,
        30_000,
      );
    });
    // The stream's position was read by get-owned-1.lua, in the step that read the task: no XREVRANGE of its own.
    const positions = seen.filter((command) => command.name === 'xrevrange');
    expect(positions.length, JSON.stringify(seen)).to.be.at.least(1);
    expect(
      positions.every((command) => command.source === 'lua'),
      JSON.stringify(seen),
    ).to.equal(true);
    await engine.store.settle((await engine.store.get(taskId))!, cancelledSettlement());
    await answer;
  });

  it('T-SEC-3: tasks/result of unknown ids is throttled by the failed-lookup budget (RATE_LIMIT_FAILED_LOOKUPS)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const codes: number[] = [];
    // 3 failed lookups per 60 s window: at most two windows' worth before one is refused.
    for (let i = 0; i < 8 && !codes.includes(-32029); i++) {
      const reply = await client.rpc('tasks/result', { taskId: randomUUID() });
      codes.push(reply.error?.code ?? 0);
    }
    expect(codes.filter((code) => code === -32602).length).to.be.within(3, 6);
    expect(codes.at(-1)).to.equal(-32029);
  });

  it('T-SEC-3, invariant 2: over RATE_LIMIT_PER_ADDRESS a task-augmented tools/call is refused with -32029 and creates nothing, no job either', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    let refused: { code: number; message: string } | undefined;
    let admitted = 0;
    const before = await tasksCreated();
    const jobs = await jobsQueued();
    for (let i = 0; i < 2 * PER_ADDRESS + 5 && !refused; i++) {
      const reply = await client.rpc('tools/call', { name: TOOL, arguments: {}, task: {} });
      if (reply.error) refused = reply.error;
      else admitted++;
    }
    expect(refused?.code).to.equal(-32029);
    expect(refused?.message).to.match(/task operations from this address .*RATE_LIMIT_PER_ADDRESS/);
    expect(await tasksCreated()).to.equal(before + admitted);
    expect(await jobsQueued()).to.equal(jobs + admitted);
    // The refusal is counted where operators look.
    const counters = await inspect.hgetall(`${system.prefix}:security-counters`);
    expect(Number(counters['throttled_requests'] ?? 0)).to.be.greaterThan(0);
  });
});
