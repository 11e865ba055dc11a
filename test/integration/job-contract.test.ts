// Job contract v1 (docs/job-contract.md): a consumer written without our packages — scripts/external-consumer.mjs,
// plain bullmq — serves the `shout` tool from the queue `ext-shout`, and its return values and failures become
// correct MCP results and task statuses.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { eventually, McpTestClient, type RpcError, sleep } from '../support/mcp-client.ts';
import { repoRoot, spawnService, startSystem, type ChildHandle, type System } from '../support/processes.ts';

interface JsonSchemaObject {
  required: string[];
  properties: Record<string, { type?: string; pattern?: string }>;
}

describe('job contract v1: an external consumer of ext-<tool> (plain bullmq, none of our packages)', function () {
  this.timeout(60_000);
  let system: System;
  let client: McpTestClient;
  let consumer: ChildHandle | undefined;
  let waitingTaskId: string;

  before(async () => {
    system = await startSystem({ env: { MAINTENANCE_INTERVAL_MS: '100', RECONCILE_AFTER_MS: '300' } });
    client = await McpTestClient.connect(system.apiUrl);
  });
  after(async () => {
    await consumer?.stop();
    await system?.stop();
  });

  const getTask = (taskId: string) => client.call('tasks/get', { taskId });
  const finished = (taskId: string) =>
    eventually(async () => {
      const task = await getTask(taskId);
      return ['completed', 'failed', 'cancelled'].includes(String(task['status'])) ? task : undefined;
    }, 20_000);

  it('our workers leave the job in ext-shout, reconciliation leaves the task alone, and the job data matches the schema', async () => {
    const task = await client.createTask('shout', { text: 'hello' });
    waitingTaskId = String(task['taskId']);
    await sleep(1000); // > RECONCILE_AFTER_MS, several maintenance passes
    expect((await getTask(waitingTaskId))['status']).to.equal('working');
    expect(await system.redis.lrange(`${system.prefix}:ext-shout:wait`, 0, -1)).to.include(waitingTaskId);
    expect(await system.redis.exists(`${system.prefix}:tool-shout:${waitingTaskId}`)).to.equal(0);

    const schema = JSON.parse(readFileSync(join(repoRoot, 'docs', 'job-contract.v1.schema.json'), 'utf8')) as {
      $defs: { jobData: JsonSchemaObject };
    };
    const job = await system.redis.hgetall(`${system.prefix}:ext-shout:${waitingTaskId}`);
    expect(job['name']).to.equal('shout');
    const data = JSON.parse(job['data'] ?? '{}') as Record<string, unknown>;
    const { required, properties } = schema.$defs.jobData;
    expect(Object.keys(data)).to.have.members(required);
    for (const [name, rule] of Object.entries(properties)) {
      expect(rule.type === 'object' ? typeof data[name] === 'object' : typeof data[name], name).to.equal(
        rule.type === 'object' ? true : rule.type,
      );
      if (rule.pattern) expect(String(data[name])).to.match(new RegExp(rule.pattern));
    }
    expect(data).to.deep.equal({ taskId: waitingTaskId, tool: 'shout', arguments: { text: 'hello' } });
  });

  it('cancelling a task removes its waiting job from ext-shout', async () => {
    const task = await client.createTask('shout', { text: 'never' });
    const taskId = String(task['taskId']);
    await client.call('tasks/cancel', { taskId });
    expect(await system.redis.exists(`${system.prefix}:ext-shout:${taskId}`)).to.equal(0);
  });

  it('once a consumer runs, a returned CallToolResult completes the task with exactly that result', async () => {
    consumer = await spawnService(
      'external-consumer',
      'scripts/external-consumer.mjs',
      { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
      /external consumer ready/,
    );
    const result = await client.call('tasks/result', { taskId: waitingTaskId });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'HELLO' }]);
    expect(result['structuredContent']).to.deep.equal({ shouted: 'HELLO' });
    const task = await getTask(waitingTaskId);
    expect(task['status']).to.equal('completed');
    // The finished job is kept a while (EXTERNAL_JOB_RETENTION), so reconciliation can read its outcome too.
    expect(await system.redis.zscore(`${system.prefix}:ext-shout:completed`, waitingTaskId)).to.not.equal(null);
  });

  it('a completion whose queue event was missed is settled from the kept job by reconciliation, not called lost', async () => {
    // Killed, not stopped: a worker that dies keeps its catalog entry for CATALOG_GRACE_MS, so calls are still
    // taken; a cleanly stopped one would withdraw it (docs/catalog.md).
    const [worker] = system.workers;
    await worker?.stop('SIGKILL');
    const task = await client.createTask('shout', { text: 'missed' });
    const taskId = String(task['taskId']);
    await eventually(() => system.redis.zscore(`${system.prefix}:ext-shout:completed`, taskId), 20_000);
    // As if the capped event stream had dropped the event before any listener read it.
    await system.redis.del(`${system.prefix}:ext-shout:events`);
    const restarted = await system.addWorker();
    const done = await finished(taskId);
    expect(done['status']).to.equal('completed');
    const result = await client.call('tasks/result', { taskId });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'MISSED' }]);
    // The log line follows the settlement, so it may reach stdout just after the client saw the status.
    await eventually(
      () => restarted.records().some((line) => line['message'] === 'task settled by reconciliation') || undefined,
      5_000,
    );
  });

  it('a plain (non-task) call is answered with the consumer result too', async () => {
    const result = await client.call('tools/call', { name: 'shout', arguments: { text: 'plain' } });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'PLAIN' }]);
  });

  it('isError: true -> failed with the text as statusMessage, the result kept verbatim', async () => {
    const task = await client.createTask('shout', { text: 'x', mode: 'error-result' });
    const done = await finished(String(task['taskId']));
    expect(done['status']).to.equal('failed');
    expect(done['statusMessage']).to.equal('Tool execution failed: refused to shout "x"');
    const result = await client.call('tasks/result', { taskId: task['taskId'] });
    expect(result['isError']).to.equal(true);
  });

  it('a thrown error (after the attempts) -> failed, tasks/result answers -32603 with the failedReason', async () => {
    const task = await client.createTask('shout', { text: 'y', mode: 'throw' });
    const done = await finished(String(task['taskId']));
    expect(done['status']).to.equal('failed');
    expect(done['statusMessage']).to.equal(`Tool 'shout' failed: cannot shout "y"`);
    try {
      await client.call('tasks/result', { taskId: task['taskId'] });
      expect.fail('expected a JSON-RPC error');
    } catch (error) {
      expect((error as RpcError).code).to.equal(-32603);
      expect((error as RpcError).message).to.equal(`-32603: Tool 'shout' failed: cannot shout "y"`);
    }
  });

  it('a return value that is not a CallToolResult -> failed, saying so', async () => {
    const task = await client.createTask('shout', { text: 'z', mode: 'invalid' });
    const done = await finished(String(task['taskId']));
    expect(done['status']).to.equal('failed');
    expect(done['statusMessage']).to.match(/its external consumer returned an invalid CallToolResult \(content: /);
  });
});
