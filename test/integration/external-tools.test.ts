// External tools end to end (docs/external-tools.md): the `batch_report` tool submits to a fake batch system running
// in its own process, which reports back by callback or is polled; api and worker are real processes.
import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { eventually, McpTestClient, RpcError } from '../support/mcp-client.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { spawnService, startSystem, type ChildHandle, type System } from '../support/processes.ts';

interface BatchJobView {
  id: string;
  idempotencyKey?: string;
  state: string;
  cancelRequests: number;
  callback?: { url: string; token: string };
  callbacks: { type: string; status: number | string }[];
}

const SECRET = randomBytes(32).toString('hex');

describe('external tools: work that runs elsewhere (fake batch system in its own process)', function () {
  this.timeout(60_000);
  let batch: ChildHandle;
  let batchUrl: string;
  let system: System;
  let client: McpTestClient;

  before(async () => {
    const port = await freePort();
    batchUrl = `http://127.0.0.1:${port}`;
    batch = await spawnService(
      'fake-batch',
      'scripts/fake-batch.ts',
      { FAKE_BATCH_PORT: String(port), FAKE_BATCH_ROW_MS: '20' },
      /listening on/,
    );
    // Reconciliation runs often here, so that a task waiting for a callback would be failed as "lost" if the
    // reconciler did not respect its `external` marker.
    system = await startSystem({
      workers: 0,
      env: {
        CALLBACK_SECRET: SECRET,
        MAINTENANCE_INTERVAL_MS: '100',
        RECONCILE_AFTER_MS: '300',
        EXTERNAL_POLL_MIN_MS: '100',
        EXTERNAL_POLL_MAX_MS: '300',
      },
    });
    await system.addWorker({ CALLBACK_BASE_URL: new URL(system.apiUrl).origin, BATCH_SYSTEM_URL: batchUrl });
    client = await McpTestClient.connect(system.apiUrl);
  });
  after(async () => {
    await system?.stop();
    await batch?.stop();
  });

  const batchJob = async (taskId: string): Promise<BatchJobView | undefined> => {
    const { jobs } = (await (await fetch(`${batchUrl}/jobs`)).json()) as { jobs: BatchJobView[] };
    return jobs.find((job) => job.idempotencyKey === taskId);
  };
  const getTask = (taskId: string) => client.call('tasks/get', { taskId });
  const postCallback = (taskId: string, token: string | undefined, body: unknown) =>
    fetch(`${new URL(system.apiUrl).origin}/callbacks/tasks/${taskId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const finished = async (taskId: string) =>
    eventually(async () => {
      const task = await getTask(taskId);
      return ['completed', 'failed', 'cancelled'].includes(String(task['status'])) ? task : undefined;
    }, 30_000);

  it('callback: the task stays working without a job or worker slot, relays progress, and completes on the callback', async () => {
    const task = await client.createTask('batch_report', { rows: 60, delivery: 'callback' });
    const taskId = String(task['taskId']);
    // Submitted: the job is gone (the worker's part is done), the task waits in `working` with the batch job named.
    const waiting = await eventually(async () => {
      const current = await getTask(taskId);
      return /Batch job batch-/.test(String(current['statusMessage'])) ? current : undefined;
    });
    expect(waiting['status']).to.equal('working');
    // The processor returns right after that note; BullMQ then completes and removes the job.
    await eventually(async () =>
      (await system.redis.exists(`${system.prefix}:tool-batch_report:${taskId}`)) === 0 ? true : undefined,
    );
    expect((await getTask(taskId))['status']).to.equal('working');
    // Progress callbacks move the statusMessage while the batch runs (60 rows x 20 ms > RECONCILE_AFTER_MS).
    await eventually(async () => {
      const current = await getTask(taskId);
      return /\d+ of 60 rows/.test(String(current['statusMessage'])) ? current : undefined;
    });
    const result = await client.call('tasks/result', { taskId });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Report over 60 rows: sum of row numbers = 1830' }]);
    const done = await getTask(taskId);
    expect(done['status']).to.equal('completed');
    const job = await batchJob(taskId);
    expect(job?.callbacks.filter((c) => c.type === 'result')).to.deep.equal([{ type: 'result', status: 200 }]);
  });

  it('polling: the worker polls the status URL from a delayed job and completes the task', async () => {
    const task = await client.createTask('batch_report', { rows: 30, delivery: 'poll' });
    const taskId = String(task['taskId']);
    await eventually(async () => {
      const state = await system.redis.hget(`${system.prefix}:task:${taskId}`, 'external');
      return state ? state : undefined;
    });
    const result = await client.call('tasks/result', { taskId });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Report over 30 rows: sum of row numbers = 465' }]);
    const job = await batchJob(taskId);
    expect(job?.callback).to.equal(undefined);
    expect(job?.state).to.equal('succeeded');
  });

  for (const delivery of ['callback', 'poll'] as const) {
    it(`external failure (${delivery}): the task fails with the batch system's message`, async () => {
      const task = await client.createTask('batch_report', { rows: 2_000_000, delivery });
      const taskId = String(task['taskId']);
      const done = await finished(taskId);
      expect(done['status']).to.equal('failed');
      expect(done['statusMessage']).to.match(/^Tool 'batch_report' failed: row limit exceeded: 2000000 rows asked/);
      try {
        await client.call('tasks/result', { taskId });
        expect.fail('tasks/result should answer the JSON-RPC error');
      } catch (error) {
        expect(error).to.be.instanceOf(RpcError);
        expect((error as RpcError).code).to.equal(-32603);
        expect((error as RpcError).message).to.match(/row limit exceeded/);
      }
    });
  }

  it('callback tokens: forged, foreign, expired and missing tokens are rejected; a replayed final report changes nothing', async () => {
    const task = await client.createTask('batch_report', { rows: 5, delivery: 'callback' });
    const taskId = String(task['taskId']);
    await client.call('tasks/result', { taskId });
    const other = await client.createTask('batch_report', { rows: 500, delivery: 'callback' });
    const otherId = String(other['taskId']);
    const job = await eventually(() => batchJob(taskId));
    const token = job.callback!.token;
    const before = await getTask(taskId);
    const final = {
      type: 'result',
      result: { content: [{ type: 'text', text: 'Report over 5 rows: sum of row numbers = 15' }] },
    };

    const [version, expiry, mac] = token.split('.');
    const forged = `${version}.${expiry}.${mac!.slice(0, -2)}${mac!.endsWith('AA') ? 'BB' : 'AA'}`;
    const longer = `${version}.${Number(expiry) + 1}.${mac}`;
    const rejected = [
      await postCallback(taskId, forged, final),
      await postCallback(taskId, longer, final),
      await postCallback(otherId, token, final), // bound to its task: useless on another
      await postCallback(taskId, undefined, final),
      await postCallback(taskId, 'not-a-token', final),
    ];
    for (const response of rejected) {
      expect(response.status).to.equal(401);
      expect(response.headers.get('www-authenticate')).to.match(/^Bearer/);
    }
    // Expired: computed independently from the documented format (with the expiry a second ago).
    const expiredAt = Date.now() - 1000;
    const expiredToken = `v1.${expiredAt}.${createHmac('sha256', SECRET).update(`mcpt-callback.v1.${taskId}.${expiredAt}`).digest('base64url')}`;
    const expiredReply = await postCallback(taskId, expiredToken, final);
    expect(expiredReply.status).to.equal(401);
    expect(((await expiredReply.json()) as { message: string }).message).to.match(/expired/);

    // Replay of the same final report (a retrying webhook): success, nothing changes.
    const replay = await postCallback(taskId, token, final);
    expect(replay.status).to.equal(200);
    expect(await replay.json()).to.deep.equal({ status: 'completed', duplicate: true });
    // A different final report on a used token: rejected.
    const conflict = await postCallback(taskId, token, { type: 'failure', message: 'changed my mind' });
    expect(conflict.status).to.equal(409);
    const progress = await postCallback(taskId, token, { type: 'progress', progress: 1 });
    expect(progress.status).to.equal(409);
    const after = await getTask(taskId);
    expect(after).to.deep.equal(before);
    expect(await client.call('tasks/result', { taskId })).to.deep.include({ content: final.result.content });

    // A malformed payload with a good token is a 400 that names the problem.
    const otherJob = await eventually(() => batchJob(otherId));
    const bad = await postCallback(otherId, otherJob.callback!.token, { type: 'result', result: { content: 'x' } });
    expect(bad.status).to.equal(400);
    await client.call('tasks/cancel', { taskId: otherId });
  });

  it('edges: a callback is authenticated before its body is read: without a valid token a malformed body gets 401, not a parse error', async () => {
    const task = await client.createTask('batch_report', { rows: 500, delivery: 'callback' });
    const taskId = String(task['taskId']);
    const job = await eventually(() => batchJob(taskId));
    const send = (token: string | undefined) =>
      fetch(`${new URL(system.apiUrl).origin}/callbacks/tasks/${taskId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: '{"type": "progress", "progress": ',
      });
    for (const token of [undefined, 'not-a-token']) {
      const refused = await send(token);
      expect(refused.status).to.equal(401);
      expect(((await refused.json()) as { error: string }).error).to.equal('invalid_token');
    }
    // With the task's token the same body is read, and refused for what it is.
    const parsed = await send(job.callback!.token);
    expect(parsed.status).to.equal(400);
    expect(((await parsed.json()) as { error: string }).error).to.equal('invalid_payload');
    await client.call('tasks/cancel', { taskId });
  });

  it('duplicate final callbacks racing each other settle the task once', async () => {
    const task = await client.createTask('batch_report', { rows: 1000, delivery: 'callback' });
    const taskId = String(task['taskId']);
    const job = await eventually(async () => {
      const found = await batchJob(taskId);
      const marked = await system.redis.hget(`${system.prefix}:task:${taskId}`, 'external');
      return found && marked ? found : undefined;
    });
    const final = { type: 'result', result: { content: [{ type: 'text', text: 'early' }] } };
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => postCallback(taskId, job.callback!.token, final)),
    );
    const bodies = (await Promise.all(replies.map((reply) => reply.json()))) as Record<string, unknown>[];
    expect(replies.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200, 200]);
    expect(bodies.filter((body) => body['duplicate'] !== true)).to.have.length(1);
    const history = JSON.parse(
      (await system.redis.hget(`${system.prefix}:task:${taskId}`, 'history')) ?? '[]',
    ) as unknown[][];
    expect(history.filter((entry) => entry[1] === 'completed')).to.have.length(1);
    await fetch(`${batchUrl}/jobs/${job.id}/cancel`, { method: 'POST' });
  });

  for (const delivery of ['callback', 'poll'] as const) {
    it(`cancel (${delivery}): tasks/cancel is forwarded to the batch system, and a late report is refused`, async () => {
      const task = await client.createTask('batch_report', { rows: 1000, delivery });
      const taskId = String(task['taskId']);
      await eventually(() =>
        system.redis.hget(`${system.prefix}:task:${taskId}`, 'external').then((v) => v ?? undefined),
      );
      const cancelled = await client.call('tasks/cancel', { taskId });
      expect(cancelled['status']).to.equal('cancelled');
      const job = await eventually(async () => {
        const found = await batchJob(taskId);
        return found?.state === 'cancelled' ? found : undefined;
      });
      expect(job.cancelRequests).to.be.at.least(1);
      if (delivery === 'callback') {
        const late = await postCallback(taskId, job.callback!.token, {
          type: 'result',
          result: { content: [{ type: 'text', text: 'too late' }] },
        });
        expect(late.status).to.equal(409);
        expect(await late.json()).to.include({ error: 'task_ended', status: 'cancelled' });
      }
      expect((await getTask(taskId))['status']).to.equal('cancelled');
    });
  }
});
