// The deployed shape (as in docker-compose.yml): 2 api replicas, 3 workers, one Redis with AOF. One MCP session
// is served by both replicas request by request, the work spreads over the workers, and the system rides out a
// worker crash, an api replica crash and a Redis restart.
import { expect } from 'chai';
import { eventually, McpTestClient, type RpcError } from '../support/mcp-client.ts';
import { startSystem, type ApiHandle, type ChildHandle, type System } from '../support/processes.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

describe('topology: 2 api replicas, 3 workers, one Redis', function () {
  this.timeout(60_000);
  let redisServer: RedisServer;
  let system: System;
  /** One session, reached through replica A and through replica B. */
  let a: McpTestClient;
  let b: McpTestClient;
  let apiA: ApiHandle;
  let apiB: ApiHandle;

  before(async () => {
    redisServer = await startRedisServer({ aof: true });
    system = await startSystem({
      redisUrl: redisServer.url,
      apis: 2,
      workers: 3,
      env: {
        // Few slots per worker, so a burst of tasks has to use every worker.
        WORKER_CONCURRENCY: '2',
        // A killed worker's job is taken over after about 2 s instead of 30 s.
        WORKER_LOCK_DURATION_MS: '2000',
        WORKER_STALLED_INTERVAL_MS: '1000',
        RESULT_RECHECK_MS: '1000',
      },
    });
    [apiA, apiB] = system.apis as [ApiHandle, ApiHandle];
    a = await McpTestClient.connect(apiA.url);
    b = new McpTestClient(apiB.url);
    b.sessionId = a.sessionId;
  });
  after(async () => {
    await system?.stop();
    await redisServer?.stop();
  });

  /** The worker whose log says it settled `taskId`. */
  function settledBy(taskId: unknown): string | undefined {
    for (const worker of system.workers) {
      const line = worker
        .records()
        .find((record) => record['taskId'] === taskId && record['message'] === 'task settled');
      if (line) return String(line['worker']);
    }
    return undefined;
  }

  it('serves one session from both replicas: create on A, get on B, result on A, list on B, cancel on B', async () => {
    const tools = await b.call('tools/list');
    expect((tools['tools'] as { name: string }[]).map((tool) => tool.name)).to.include('wait');

    const quick = await a.createTask('wait', { seconds: 0.3 });
    const slow = await b.createTask('wait', { seconds: 30 });
    expect((await b.call('tasks/get', { taskId: quick['taskId'] }))['taskId']).to.equal(quick['taskId']);
    const result = await a.call('tasks/result', { taskId: quick['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 0.3s' }]);

    const listed = (await b.call('tasks/list'))['tasks'] as { taskId: string }[];
    expect(listed.map((task) => task.taskId)).to.include.members([quick['taskId'], slow['taskId']]);

    const cancelled = await b.call('tasks/cancel', { taskId: slow['taskId'] });
    expect(cancelled['status']).to.equal('cancelled');
    expect((await a.call('tasks/get', { taskId: slow['taskId'] }))['status']).to.equal('cancelled');
    try {
      await a.call('tasks/result', { taskId: slow['taskId'] });
      expect.fail('tasks/result of a cancelled task must fail');
    } catch (error) {
      expect((error as RpcError).code).to.equal(-32800);
    }
  });

  it('spreads the tasks of one session over every worker', async () => {
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).createTask('wait', { seconds: 1 })),
    );
    await Promise.all(created.map((task, i) => (i % 2 === 0 ? b : a).call('tasks/result', { taskId: task['taskId'] })));
    const workers = await eventually(() => {
      const names = created.map((task) => settledBy(task['taskId']));
      return names.every(Boolean) ? new Set(names) : undefined;
    });
    expect(workers.size).to.equal(3);
  });

  it('a worker killed mid-task: its job is taken over by another worker and the task completes once', async () => {
    const created = await a.createTask('wait', { seconds: 1 });
    const running = await eventually(async () => {
      const task = await b.call('tasks/get', { taskId: created['taskId'] });
      const match = /^Running on (\S+)\.$/.exec(String(task['statusMessage']));
      return match?.[1];
    });
    const victim = system.workers.find((worker) => running.endsWith(`-${worker.process.pid}`)) as ChildHandle;
    await victim.stop('SIGKILL');
    const result = await b.call('tasks/result', { taskId: created['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 1s' }]);
    const survivor = await eventually(() => settledBy(created['taskId']));
    expect(survivor).to.not.equal(running);
    const settlements = system.workers.flatMap((worker) =>
      worker.records().filter((line) => line['taskId'] === created['taskId'] && line['message'] === 'task settled'),
    );
    expect(settlements).to.have.length(1);
  });

  it('an api replica killed under a waiting tasks/result: the client asks the other replica and gets the result', async () => {
    const created = await a.createTask('wait', { seconds: 1 });
    const waiting = a.call('tasks/result', { taskId: created['taskId'] }).then(
      () => 'answered',
      () => 'cut off',
    );
    await apiA.stop('SIGKILL');
    expect(await waiting).to.equal('cut off');
    const result = await b.call('tasks/result', { taskId: created['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 1s' }]);
  });

  it('Redis restarted (AOF): tasks and the session survive, and api and workers reconnect by themselves', async () => {
    const before = await b.createTask('wait', { seconds: 0 });
    await b.call('tasks/result', { taskId: before['taskId'] });
    await redisServer.restart('SIGTERM');
    // The session and the finished task are still there, and new work runs once the processes are back.
    expect((await b.call('tasks/get', { taskId: before['taskId'] }))['status']).to.equal('completed');
    const after = await b.createTask('wait', { seconds: 0 });
    const result = await b.call('tasks/result', { taskId: after['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 0s' }]);
  });
});
