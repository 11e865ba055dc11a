// The core task paths against a Redis Cluster (3 masters, 3 replicas, a password), with real api and worker
// processes configured by REDIS_CLUSTER_NODES; then the master holding the runner's slot is killed and the
// system carries on once its replica has taken over.
import { expect } from 'chai';
import type { Cluster } from 'ioredis';
import { RELATED_TASK_META_KEY } from '@mcp-tasks/protocol';
import { eventually, McpTestClient, type RpcError } from '../support/mcp-client.ts';
import { spawnApi, startSystem, clusterNodesValue, type System } from '../support/processes.ts';
import { startRedisCluster, type RedisClusterFixture } from '../support/redis-cluster.ts';
import { SseConnection } from '../support/sse-client.ts';

describe('Redis Cluster (3 masters + replicas; 2 api replicas, 2 workers)', function () {
  this.timeout(60_000);
  let cluster: RedisClusterFixture;
  let system: System;
  let client: McpTestClient;
  let onB: McpTestClient;
  let startedAt = 0;

  before(async () => {
    cluster = await startRedisCluster({ replicas: 1, password: 'cluster secret', nodeTimeoutMs: 1000 });
    system = await startSystem({
      cluster,
      apis: 2,
      workers: 2,
      // Cancellation reaches workers only through pub/sub here (no periodic re-check within the test).
      env: {
        LIST_PAGE_SIZE: '2',
        RESULT_RECHECK_MS: '1000',
        MAINTENANCE_INTERVAL_MS: '500',
        CANCEL_CHECK_INTERVAL_MS: '600000',
      },
    });
    startedAt = Date.now();
    client = await McpTestClient.connect(String(system.apis[0]?.url));
    // The same session on the other replica.
    onB = new McpTestClient(String(system.apis[1]?.url));
    onB.sessionId = client.sessionId;
  });
  after(async () => {
    await system?.stop();
    await cluster?.stop();
  });

  const statusOf = async (taskId: unknown) => (await onB.call('tasks/get', { taskId }))['status'];
  const statusMessageOf = async (taskId: unknown) => {
    const message = (await onB.call('tasks/get', { taskId }))['statusMessage'];
    return typeof message === 'string' ? message : '';
  };

  /** Cancels a task once a worker runs it, on replica B, and waits for its tool to stop. */
  async function cancelWhileRunning(taskId: unknown): Promise<void> {
    await eventually(async () => {
      const task = await onB.call('tasks/get', { taskId });
      return String(task['statusMessage']).startsWith('Running') ? true : undefined;
    });
    const cancelled = await onB.call('tasks/cancel', { taskId });
    expect(cancelled['status']).to.equal('cancelled');
    await eventually(() =>
      system.workers.some((worker) =>
        worker.records().some((line) => line['taskId'] === taskId && line['message'] === 'tool stopped'),
      )
        ? true
        : undefined,
    );
  }

  it('puts every key of the runner, ours and BullMQ’s, in the one slot of the prefix’s hash tag', async () => {
    expect(system.prefix).to.match(/^\{test-[0-9a-f]+\}$/);
    const created = await client.createTask('wait', { seconds: 0 });
    await client.call('tasks/result', { taskId: created['taskId'] });
    // An external consumer's task (job contract v1, no consumer here): the create script writes its job in
    // ext-shout with the record, so that queue's keys are in the prefix's slot too (else CROSSSLOT).
    const external = String((await client.createTask('shout', { text: 'slot' }))['taskId']);
    const redis = system.redis as Cluster;
    expect(await redis.lrange(`${system.prefix}:ext-shout:wait`, 0, -1)).to.include(external);
    const keys: string[] = [];
    for (const node of redis.nodes('master')) keys.push(...(await node.keys(`${system.prefix}:*`)));
    expect(keys).to.include(`${system.prefix}:task:${String(created['taskId'])}`);
    expect(keys.some((key) => key.startsWith(`${system.prefix}:tool-wait:`))).to.equal(true, 'BullMQ keys');
    expect(keys).to.include(`${system.prefix}:ext-shout:${external}`);
    const slots = new Set(await Promise.all(keys.map((key) => redis.call('CLUSTER', 'KEYSLOT', key))));
    expect([...slots]).to.deep.equal([await redis.call('CLUSTER', 'KEYSLOT', system.prefix)]);
    await client.call('tasks/cancel', { taskId: external });
  });

  it('T-CREATE-1, T-GET-1, T-RES-2: create on one replica, get and result on the other', async () => {
    const created = await client.createTask('wait', { seconds: 0.5 });
    expect(created['status']).to.equal('working');
    const task = await onB.call('tasks/get', { taskId: created['taskId'] });
    expect(task['taskId']).to.equal(created['taskId']);
    const result = await onB.call('tasks/result', { taskId: created['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 0.5s' }]);
    expect(result['_meta']).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: created['taskId'] } });
    expect(await statusOf(created['taskId'])).to.equal('completed');
  });

  it("T-RES-1: a failed tool's JSON-RPC error comes back through tasks/result", async () => {
    const created = await client.createTask('crash', { message: 'cluster fire' });
    const reply = await onB.rpc('tasks/result', { taskId: created['taskId'] });
    expect(reply.error?.code).to.equal(-32603);
    expect(reply.error?.message).to.equal("Tool 'crash' failed: cluster fire");
  });

  it('T-LIST-1: lists the session’s tasks page by page, newest first', async () => {
    const lister = await McpTestClient.connect(String(system.apis[1]?.url));
    const ids: unknown[] = [];
    for (let i = 0; i < 3; i++) ids.push((await lister.createTask('wait', { seconds: 0 }))['taskId']);
    const first = await lister.call('tasks/list');
    const second = await lister.call('tasks/list', { cursor: first['nextCursor'] });
    const seen = [...(first['tasks'] as { taskId: string }[]), ...(second['tasks'] as { taskId: string }[])];
    expect(seen.map((task) => task.taskId)).to.deep.equal([...ids].reverse());
    expect(second).to.not.have.property('nextCursor');
  });

  it('T-TTL-1: the expiry sweep deletes an expired task with its index entries and events (one slot, one MULTI)', async () => {
    const owner = await McpTestClient.connect(String(system.apis[0]?.url));
    const finished = String((await owner.createTask('wait', { seconds: 0 }, { ttl: 1000 }))['taskId']);
    await owner.call('tasks/result', { taskId: finished });
    const running = String((await owner.createTask('wait', { seconds: 30 }, { ttl: 1000 }))['taskId']);
    const redis = system.redis as Cluster;
    const events = `${system.prefix}:session:${String(owner.sessionId)}:events`;
    const traces = async () => {
      const [expiries, all, live, records, entries] = await Promise.all([
        redis.zrange(`${system.prefix}:expiries`, '0', '-1'),
        redis.zrange(`${system.prefix}:all-tasks`, '0', '-1'),
        redis.zrange(`${system.prefix}:live`, '0', '-1'),
        redis.exists(`${system.prefix}:task:${finished}`, `${system.prefix}:task:${running}`),
        redis.xrange(events, '-', '+'),
      ]);
      const mentions = [...expiries, ...all, ...live, ...entries.map(([, fields]) => fields.join(' '))].filter(
        (text) => text.includes(finished) || text.includes(running),
      );
      return mentions.length + records;
    };
    expect(await traces()).to.be.above(0);
    await eventually(async () => ((await traces()) === 0 ? true : undefined));
    await eventually(() =>
      system.workers.some((worker) =>
        worker.records().some((line) => line['taskId'] === running && line['message'] === 'tool stopped'),
      )
        ? true
        : undefined,
    );
  });

  it('T-CANCEL-2: a cancel on one replica stops the tool a worker runs (control channel over the cluster)', async () => {
    const created = await client.createTask('wait', { seconds: 30 });
    await cancelWhileRunning(created['taskId']);
    try {
      await client.call('tasks/result', { taskId: created['taskId'] });
      expect.fail('tasks/result of a cancelled task must fail');
    } catch (error) {
      expect((error as RpcError).code).to.equal(-32800);
    }
  });

  it('T-INPUT-1: input_required: an elicitation reaches the tasks/result stream on A, is answered on B, the task resumes', async () => {
    const asker = new McpTestClient(String(system.apis[0]?.url));
    await asker.initialize('2025-11-25', { elicitation: { form: {} } });
    const askerOnB = new McpTestClient(String(system.apis[1]?.url));
    askerOnB.sessionId = asker.sessionId;
    const task = await asker.createTask('ask_user', { question: 'Which slot?' });
    await eventually(async () =>
      (await askerOnB.call('tasks/get', { taskId: task['taskId'] }))['status'] === 'input_required' ? true : undefined,
    );
    const stream = await SseConnection.open(asker.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': String(asker.sessionId),
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'result-1',
        method: 'tasks/result',
        params: { taskId: task['taskId'] },
      }),
    });
    const request = await stream.next(
      (event) => event.message['method'] === 'elicitation/create' && 'id' in event.message,
    );
    const answered = await askerOnB.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'one' } },
    });
    expect(answered.status).to.equal(202);
    const final = await stream.next((event) => event.message['id'] === 'result-1');
    expect(final.message['result']).to.deep.include({ content: [{ type: 'text', text: 'one' }] });
    await stream.finished();
    expect((await askerOnB.call('tasks/get', { taskId: task['taskId'] }))['status']).to.equal('completed');
  });

  it('a worker SIGKILLed mid-tool: the other finds its connections gone on every master and continues the task within 15 s', async () => {
    // A worker tells who is gone once its own connections are an interval old (WORKER_LIVENESS_CHECK_MS, 5 s).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 5500 - Date.now())));
    const taskId = String((await client.createTask('wait', { seconds: 120 }))['taskId']);
    const runningOn = async () => /^Running on (\S+)\.$/.exec(await statusMessageOf(taskId))?.[1];
    const holder = await eventually(runningOn);
    const victim = system.workers.find((worker) => holder.endsWith(`-${String(worker.process.pid)}`));
    if (!victim) throw new Error(`no worker named ${holder}`);
    const killedAt = Date.now();
    await victim.stop('SIGKILL');
    await eventually(async () => ((await runningOn()) ?? holder) !== holder || undefined, 20_000, 100);
    expect(Date.now() - killedAt, 'from kill -9 to the next attempt').to.be.below(15_000);
    await onB.call('tasks/cancel', { taskId });
    // Two workers again for what follows.
    await system.addWorker();
  });

  it('refuses to start on a cluster with a prefix that has no hash tag, and says what to write', async () => {
    let failure: unknown;
    try {
      await spawnApi({ REDIS_CLUSTER_NODES: clusterNodesValue(cluster), REDIS_PREFIX: 'mcpt' });
    } catch (error) {
      failure = error;
    }
    expect(String(failure)).to.contain('REDIS_PREFIX="mcpt"').and.contain('REDIS_PREFIX={mcpt}');
  });

  it('survives a failover of the master holding the runner’s slot: a task running across it completes', async () => {
    const running = await client.createTask('wait', { seconds: 3 });
    const master = await cluster.masterOf(system.prefix);
    await master.kill();
    // Meanwhile the replica is promoted (cluster-node-timeout 1 s, then an election); every process reconnects on
    // its own, and the task running through it settles.
    const result = await client.call('tasks/result', { taskId: running['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 3s' }]);
    const promoted = await cluster.masterOf(system.prefix);
    expect(promoted.port).to.not.equal(master.port);
    // New work flows through both replicas and the workers again, and cancellation still reaches them.
    const after = await onB.createTask('wait', { seconds: 0 });
    expect((await client.call('tasks/result', { taskId: after['taskId'] }))['content']).to.deep.equal([
      { type: 'text', text: 'Waited 0s' },
    ]);
    const cancelMe = await client.createTask('wait', { seconds: 30 });
    await cancelWhileRunning(cancelMe['taskId']);
  });
});
