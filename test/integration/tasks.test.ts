// End to end through a real api and worker (in the test's process): creation, status, result, list, cancel, ttl.
import { expect } from 'chai';
import { RELATED_TASK_META_KEY, MODEL_IMMEDIATE_RESPONSE_META_KEY } from '@mcp-tasks/protocol';
import { eventually, expectRpcError, McpTestClient, sleep } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('tasks end to end (api + worker in process, real Redis)', function () {
  this.timeout(60_000);
  let system: System;
  let client: McpTestClient;

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: {
        LIST_PAGE_SIZE: '3',
        TASK_TTL_MAX_MS: '600000',
        TASK_TTL_DEFAULT_MS: '300000',
        RESULT_RECHECK_MS: '1000',
        MAINTENANCE_INTERVAL_MS: '200',
      },
    });
    client = await McpTestClient.connect(system.apiUrl);
  });
  after(async () => {
    await system?.stop();
  });

  describe('creation', () => {
    it('T-CREATE-1, T-LIFE-1, C26-LEG-2: a task-augmented call answers a working task at once, before the tool ran, in the 2025-11-25 shape', async () => {
      // The tool waits ten minutes, longer than this test's timeout: an answer that waited for it fails the test,
      // which proves "at once" without a clock that a loaded machine could stretch.
      const result = await client.call('tools/call', {
        name: 'wait',
        arguments: { seconds: 600 },
        task: { ttl: 120_000 },
      });
      const task = result['task'] as Record<string, unknown>;
      expect(task['status']).to.equal('working');
      await client.call('tasks/cancel', { taskId: String(task['taskId']) });
      expect(result).to.not.have.property('content');
      // The legacy wire keeps its shapes beside 2026-07-28: nested under task, ttl and pollInterval, no resultType.
      expect(result).to.not.have.any.keys('resultType', 'taskId');
      expect(task).to.include.keys('taskId', 'createdAt', 'lastUpdatedAt', 'ttl', 'pollInterval');
      expect(task).to.not.have.any.keys('ttlMs', 'pollIntervalMs');
    });

    it('T-CREATE-1: the task record and its job are in Redis when CreateTaskResult arrives (invariant 2)', async () => {
      const task = await client.createTask('wait', { seconds: 5 });
      const id = String(task['taskId']);
      const [record, job] = await Promise.all([
        system.redis.hgetall(`${system.prefix}:task:${id}`),
        system.redis.hgetall(`${system.prefix}:tool-wait:${id}`),
      ]);
      expect(record['status']).to.be.oneOf(['working']);
      expect(Object.keys(job)).to.not.be.empty;
      await client.call('tasks/cancel', { taskId: id });
    });

    it('T-CREATE-2: the requested ttl is kept within bounds, clamped above the maximum, defaulted when absent', async () => {
      expect((await client.createTask('wait', { seconds: 0 }, { ttl: 120_000 }))['ttl']).to.equal(120_000);
      expect((await client.createTask('wait', { seconds: 0 }, { ttl: 10 ** 12 }))['ttl']).to.equal(600_000);
      expect((await client.createTask('wait', { seconds: 0 }, {}))['ttl']).to.equal(300_000);
    });

    it('T-CREATE-3: CreateTaskResult carries a model-immediate-response string', async () => {
      const result = await client.call('tools/call', { name: 'wait', arguments: { seconds: 0 }, task: {} });
      const meta = result['_meta'] as Record<string, unknown>;
      expect(meta[MODEL_IMMEDIATE_RESPONSE_META_KEY]).to.be.a('string').and.match(/wait/);
    });

    it('T-ID-1, T-ID-2: task ids are receiver-generated random UUIDs (122 random bits), all distinct', async () => {
      const ids = await Promise.all(
        Array.from({ length: 20 }, () => client.createTask('wait', { seconds: 0 }).then((t) => t['taskId'])),
      );
      for (const id of ids) expect(id).to.be.a('string').and.match(UUID);
      expect(new Set(ids).size).to.equal(ids.length);
    });
  });

  describe('tasks/get', () => {
    it('T-GET-1, T-GET-2: returns the full task with ISO timestamps, the actual ttl and a pollInterval', async () => {
      const created = await client.createTask('wait', { seconds: 0 }, { ttl: 90_000 });
      const task = await client.call('tasks/get', { taskId: created['taskId'] });
      expect(task).to.include.keys('taskId', 'status', 'createdAt', 'lastUpdatedAt', 'ttl', 'pollInterval');
      expect(task['taskId']).to.equal(created['taskId']);
      expect(task['createdAt']).to.match(ISO).and.equal(created['createdAt']);
      expect(task['lastUpdatedAt']).to.match(ISO);
      expect(task['ttl']).to.equal(90_000);
      expect(task['pollInterval']).to.be.a('number').above(0);
    });

    it('T-META-2: the result of tasks/get carries no related-task _meta, and a _meta on the request is ignored', async () => {
      const a = await client.createTask('wait', { seconds: 0 });
      const b = await client.createTask('wait', { seconds: 0 });
      const task = await client.call('tasks/get', {
        taskId: a['taskId'],
        _meta: { [RELATED_TASK_META_KEY]: { taskId: b['taskId'] } },
      });
      expect(task['taskId']).to.equal(a['taskId']);
      expect(task).to.not.have.property('_meta');
    });

    it('T-LIFE-2: lastUpdatedAt moves with each status change; createdAt never changes', async () => {
      const created = await client.createTask('wait', { seconds: 0.3 });
      const done = await eventually(async () => {
        const task = await client.call('tasks/get', { taskId: created['taskId'] });
        return task['status'] === 'completed' ? task : undefined;
      });
      expect(done['createdAt']).to.equal(created['createdAt']);
      expect(Date.parse(String(done['lastUpdatedAt']))).to.be.above(Date.parse(String(created['lastUpdatedAt'])));
    });
  });

  describe('tasks/result', () => {
    it('T-RES-2, T-RES-3: blocks while the task works, then answers the tool result with the related-task _meta', async () => {
      const created = await client.createTask('wait', { seconds: 1 });
      const started = Date.now();
      const result = await client.call('tasks/result', { taskId: created['taskId'] });
      expect(Date.now() - started).to.be.above(600);
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 1s' }]);
      expect(result['_meta']).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: created['taskId'] } });
    });

    it('T-RES-1: answers exactly what the plain call answers, plus the related-task _meta', async () => {
      const plain = await client.rpc('tools/call', { name: 'wait', arguments: { seconds: 0, fail: true } });
      const created = await client.createTask('wait', { seconds: 0, fail: true });
      const viaTask = await client.rpc('tasks/result', { taskId: created['taskId'] });
      const { _meta, ...rest } = viaTask.result ?? {};
      expect(rest).to.deep.equal(plain.result);
      expect(_meta).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: created['taskId'] } });
    });

    it('T-RES-4: tasks/get keeps answering while a tasks/result is outstanding', async () => {
      const created = await client.createTask('wait', { seconds: 1.5 });
      const pending = client.call('tasks/result', { taskId: created['taskId'] });
      await sleep(200);
      const polled = await client.call('tasks/get', { taskId: created['taskId'] });
      expect(polled['status']).to.equal('working');
      await pending;
    });

    it('T-LIFE-4, T-ERR-3: a tool result with isError ends failed; tasks/get reports it, not as a protocol error', async () => {
      const created = await client.createTask('wait', { seconds: 0, fail: true });
      const result = await client.call('tasks/result', { taskId: created['taskId'] });
      expect(result['isError']).to.equal(true);
      const task = await client.call('tasks/get', { taskId: created['taskId'] });
      expect(task['status']).to.equal('failed');
      expect(task['statusMessage']).to.match(/Failed on purpose/);
    });

    it("T-LIFE-4, T-LIFE-5, T-RES-1: a thrown error fails the task and tasks/result answers the plain call's JSON-RPC error", async () => {
      const plain = await client.rpc('tools/call', { name: 'crash', arguments: { message: 'disk on fire' } });
      expect(plain.error).to.deep.equal({
        code: -32603,
        message: "Tool 'crash' failed: disk on fire",
        data: { tool: 'crash' },
      });
      const created = await client.createTask('crash', { message: 'disk on fire' });
      const viaTask = await client.rpc('tasks/result', { taskId: created['taskId'] });
      expect(viaTask.error?.code).to.equal(plain.error?.code);
      expect(viaTask.error?.message).to.equal(plain.error?.message);
      expect(viaTask.error?.data).to.deep.equal({
        tool: 'crash',
        _meta: { [RELATED_TASK_META_KEY]: { taskId: created['taskId'] } },
      });
      const task = await client.call('tasks/get', { taskId: created['taskId'] });
      expect(task['status']).to.equal('failed');
      expect(task['statusMessage']).to.equal("Tool 'crash' failed: disk on fire");
    });

    it('T-RES-2: a waiter on another api replica is woken too (pub/sub, no busy polling)', async () => {
      const other = new McpTestClient(String(system.apis[1]?.url));
      other.sessionId = client.sessionId;
      const created = await client.createTask('wait', { seconds: 0.5 });
      const result = await other.call('tasks/result', { taskId: created['taskId'] });
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 0.5s' }]);
    });

    it('T-RES-2: waiting tasks/result calls share one subscription per api replica, named in the records they wait for', async () => {
      const created = await Promise.all([1, 2, 3].map(() => client.createTask('wait', { seconds: 1.5 })));
      const ids = created.map((task) => String(task['taskId']));
      const results = ids.map((taskId) =>
        client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } }),
      );
      // Each waiting call registered its replica in its task's record, in the script that read it.
      const waiters = await eventually(async () => {
        const fields = await Promise.all(ids.map((id) => system.redis.hget(`${system.prefix}:task:${id}`, 'waiters')));
        return fields.every((field) => field !== null) ? fields : undefined;
      });
      expect(new Set(waiters).size, 'the same replica for every task').to.equal(1);
      const replicaIds = String(waiters[0]).split(',').filter(Boolean);
      expect(replicaIds).to.have.length(1);
      // No channel per task: the replicas' channels, the sessions' and the catalog's are all that is subscribed.
      const channels = (await system.redis.call('PUBSUB', 'CHANNELS', `${system.prefix}:*`)) as string[];
      expect(channels).to.include(`${system.prefix}:replica:${String(replicaIds[0])}`);
      expect(channels.filter((channel) => ids.some((id) => channel.includes(id)))).to.deep.equal([]);
      for (const result of await Promise.all(results)) {
        expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 1.5s' }]);
      }
    });
  });

  describe('tasks/list', () => {
    it('T-LIST-1, T-LIST-3: pages through every task of the session with nextCursor, newest first, no duplicates', async () => {
      const lister = await McpTestClient.connect(system.apiUrl);
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push(String((await lister.createTask('wait', { seconds: 0 }))['taskId']));
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await lister.call('tasks/list', cursor ? { cursor } : {});
        const tasks = page['tasks'] as Record<string, unknown>[];
        expect(tasks.length).to.be.at.most(3);
        seen.push(...tasks.map((task) => String(task['taskId'])));
        cursor = page['nextCursor'] as string | undefined;
        pages++;
      } while (cursor);
      expect(pages).to.equal(3);
      expect(seen).to.deep.equal([...created].reverse());
    });

    it('T-LIST-2: an invalid cursor is -32602', async () => {
      await expectRpcError(client.call('tasks/list', { cursor: 'not-a-cursor' }), -32602, /Invalid cursor/);
    });

    it("T-SEC-1: another session neither lists nor reads this session's tasks", async () => {
      const created = await client.createTask('wait', { seconds: 0 });
      const stranger = await McpTestClient.connect(system.apiUrl);
      const page = await stranger.call('tasks/list');
      expect(page['tasks']).to.deep.equal([]);
      const get = await expectRpcError(stranger.call('tasks/get', { taskId: created['taskId'] }), -32602);
      const unknown = await expectRpcError(
        stranger.call('tasks/get', { taskId: '00000000-0000-4000-8000-000000000000' }),
        -32602,
      );
      expect(get.message).to.equal(unknown.message);
      await expectRpcError(
        stranger.call('tasks/result', { taskId: created['taskId'] }),
        -32602,
        'Failed to retrieve task: Task not found',
      );
      await expectRpcError(
        stranger.call('tasks/cancel', { taskId: created['taskId'] }),
        -32602,
        'Failed to retrieve task: Task not found',
      );
    });
  });

  describe('tasks/cancel', () => {
    it("T-CANCEL-2, C26-LEG-2: moves a running task to cancelled before answering (the Task) and fires the tool's AbortSignal", async () => {
      const created = await client.createTask('wait', { seconds: 30 });
      await eventually(async () => {
        const task = await client.call('tasks/get', { taskId: created['taskId'] });
        return String(task['statusMessage']).startsWith('Running') ? task : undefined;
      });
      const cancelled = await client.call('tasks/cancel', { taskId: created['taskId'] });
      expect(cancelled['status']).to.equal('cancelled');
      expect(cancelled['taskId']).to.equal(created['taskId']);
      expect(cancelled).to.not.have.property('resultType');
      expect(cancelled).to.not.have.property('_meta');
      const worker = system.workers[0];
      await eventually(() =>
        worker?.records().some((line) => line['taskId'] === created['taskId'] && line['message'] === 'tool stopped')
          ? true
          : undefined,
      );
    });

    it('T-CANCEL-2: a job still waiting in the queue is removed', async () => {
      // Fill the worker's slots so the next job waits.
      const fillers = await Promise.all(Array.from({ length: 16 }, () => client.createTask('wait', { seconds: 3 })));
      const waiting = await client.createTask('wait', { seconds: 1 });
      const id = String(waiting['taskId']);
      await client.call('tasks/cancel', { taskId: id });
      expect(await system.redis.exists(`${system.prefix}:tool-wait:${id}`)).to.equal(0);
      await Promise.all(fillers.map((task) => client.call('tasks/cancel', { taskId: task['taskId'] })));
    });

    it('T-CANCEL-1: cancelling a terminal task is -32602 naming its status', async () => {
      const created = await client.createTask('wait', { seconds: 0 });
      await client.call('tasks/result', { taskId: created['taskId'] });
      await expectRpcError(
        client.call('tasks/cancel', { taskId: created['taskId'] }),
        -32602,
        "Cannot cancel task: already in terminal status 'completed'",
      );
    });

    it('T-CANCEL-3: a cancelled task stays cancelled after its tool would have finished', async () => {
      const created = await client.createTask('wait', { seconds: 0.4 });
      await client.call('tasks/cancel', { taskId: created['taskId'] });
      await sleep(800);
      const task = await client.call('tasks/get', { taskId: created['taskId'] });
      expect(task['status']).to.equal('cancelled');
      await expectRpcError(client.call('tasks/result', { taskId: created['taskId'] }), -32800, /cancelled/);
    });

    it('T-CANCEL-4: cancel does not delete; the cancelled task stays readable and listed until its ttl', async () => {
      const created = await client.createTask('wait', { seconds: 10 });
      await client.call('tasks/cancel', { taskId: created['taskId'] });
      expect((await client.call('tasks/get', { taskId: created['taskId'] }))['status']).to.equal('cancelled');
    });
  });

  describe('ttl and errors', () => {
    it('T-TTL-1, T-TTL-2: after its ttl a task, its result and its job are gone; lookups answer -32602', async () => {
      const created = await client.createTask('wait', { seconds: 0 }, { ttl: 1000 });
      const id = String(created['taskId']);
      await client.call('tasks/result', { taskId: id });
      await sleep(1200);
      await expectRpcError(client.call('tasks/get', { taskId: id }), -32602, /Task (not found|has expired)/);
      await expectRpcError(client.call('tasks/result', { taskId: id }), -32602);
      await eventually(async () => {
        const page = await client.call('tasks/list');
        const ids = (page['tasks'] as { taskId: string }[]).map((task) => task.taskId);
        const leftovers = await system.redis.exists(`${system.prefix}:task:${id}`, `${system.prefix}:tool-wait:${id}`);
        return !ids.includes(id) && leftovers === 0 ? true : undefined;
      });
    });

    it('T-TTL-1: a task still running when its ttl ends is deleted and its work stopped', async () => {
      const created = await client.createTask('wait', { seconds: 30 }, { ttl: 1000 });
      await sleep(1300);
      await expectRpcError(client.call('tasks/get', { taskId: created['taskId'] }), -32602);
      const worker = system.workers[0];
      await eventually(() =>
        worker?.records().some((line) => line['taskId'] === created['taskId'] && line['message'] === 'tool stopped')
          ? true
          : undefined,
      );
    });

    it('T-ERR-1: unknown, malformed and missing task ids are -32602', async () => {
      await expectRpcError(
        client.call('tasks/get', { taskId: 'nope' }),
        -32602,
        'Failed to retrieve task: Task not found',
      );
      await expectRpcError(client.call('tasks/get', { taskId: 42 }), -32602, /taskId/);
      await expectRpcError(client.call('tasks/get', {}), -32602, /taskId/);
      await expectRpcError(client.call('tasks/cancel', { taskId: '' }), -32602);
    });

    it('T-ERR-2: error messages say what went wrong', async () => {
      await expectRpcError(
        client.call('tools/call', { name: 'wait', arguments: { seconds: 'x' }, task: {} }),
        -32602,
        /Invalid arguments for tool 'wait': seconds/,
      );
      await expectRpcError(client.call('tools/call', { name: 'nope', arguments: {} }), -32602, /Unknown tool: 'nope'/);
    });
  });

  describe('worker log lines of a settlement', () => {
    const linesOf = (workers: System['workers'], taskId: string) =>
      workers.flatMap((worker) => worker.records()).filter((line) => line['taskId'] === taskId);

    it('T-AUDIT-1: at LOG_LEVEL=debug a settled task has its audit record and one "task settled" line with its attempt', async () => {
      const taskId = String((await client.createTask('wait', { seconds: 0 }))['taskId']);
      await client.call('tasks/result', { taskId });
      const lines = await eventually(() => {
        const found = linesOf(system.workers, taskId);
        return found.some((line) => line['message'] === 'task settled') ? found : undefined;
      });
      const settled = lines.filter((line) => line['message'] === 'task settled');
      expect(settled).to.have.length(1);
      expect(settled[0]).to.include({ level: 'debug', status: 'completed', tool: 'wait', jobAttempt: 1 });
      const audited = lines.filter((line) => line['audit'] === true);
      expect(audited.map((line) => line['event'])).to.deep.equal(['task.completed']);
      expect(audited[0]).to.include({ level: 'info', tool: 'wait' });
    });

    it('T-AUDIT-1: at LOG_LEVEL=info a settled task writes its audit record once and no "task settled" line', async () => {
      const quiet = await startSystem({ env: { LOG_LEVEL: 'info' } });
      try {
        const quietClient = await McpTestClient.connect(quiet.apiUrl);
        const taskId = String((await quietClient.createTask('wait', { seconds: 0 }))['taskId']);
        await quietClient.call('tasks/result', { taskId });
        const audited = await eventually(() => {
          const found = linesOf(quiet.workers, taskId).filter((line) => line['audit'] === true);
          return found.length > 0 ? found : undefined;
        });
        expect(audited.map((line) => line['event'])).to.deep.equal(['task.completed']);
        expect(linesOf(quiet.workers, taskId).filter((line) => line['message'] === 'task settled')).to.deep.equal([]);
      } finally {
        await quiet.stop();
      }
    });
  });
});
