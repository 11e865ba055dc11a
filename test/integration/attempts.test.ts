// Attempts of a job with real worker processes: a worker SIGKILLed while its tool waits for the client, and a
// worker that loses its job lock while the tool runs. Each time another attempt runs the tool; the earlier one can
// no longer move the task, its input requests are withdrawn, and the task ends exactly once.
import { expect } from 'chai';
import { KeySpace, TaskKeys, TaskStore } from '@mcp-tasks/engine';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/processes.ts';
import { SseConnection } from '../support/sse-client.ts';

// Short locks: a killed worker's job is recovered within about two seconds.
const FAST_RECOVERY = {
  WORKER_LOCK_DURATION_MS: '1000',
  WORKER_STALLED_INTERVAL_MS: '1000',
  INPUT_RECHECK_MS: '500',
  CANCEL_CHECK_INTERVAL_MS: '500',
};

describe('attempts: a worker killed or cut off mid-task (1 api, workers with 1 s job locks)', function () {
  this.timeout(90_000);
  let system: System;
  let store: TaskStore;
  let tasks: TaskKeys;

  before(async () => {
    system = await startSystem({ apis: 1, workers: 1, env: FAST_RECOVERY });
    const keys = new KeySpace(system.prefix);
    store = new TaskStore(system.redis, keys);
    tasks = new TaskKeys(keys);
  });
  after(async () => {
    await system?.stop();
  });

  const isRequest = (method: string) => (event: { message: Record<string, unknown> }) =>
    event.message['method'] === method && 'id' in event.message;

  async function waitForStatus(client: McpTestClient, taskId: unknown, status: string, timeoutMs = 10_000) {
    return eventually(async () => {
      const task = await client.call('tasks/get', { taskId });
      return task['status'] === status ? task : undefined;
    }, timeoutMs);
  }

  it('T-INPUT-4: a worker SIGKILLed while ask_user waits: the next attempt withdraws its request, and the count and history stay right', async () => {
    const client = new McpTestClient(system.apiUrl);
    await client.initialize('2025-11-25', { elicitation: { form: {} } });
    const get = await SseConnection.open(client.url, {
      method: 'GET',
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': String(client.sessionId),
        'mcp-protocol-version': '2025-11-25',
      },
    });
    try {
      const task = await client.createTask('ask_user', { question: 'Still there?' });
      const taskId = String(task['taskId']);
      const first = await get.next(isRequest('elicitation/create'));
      await waitForStatus(client, taskId, 'input_required');

      await system.workers[0]?.stop('SIGKILL');
      await system.addWorker();
      const second = await get.next(
        (event) => isRequest('elicitation/create')(event) && event.message['id'] !== first.message['id'],
        20_000,
      );
      const withdrawn = await get.next((event) => event.message['method'] === 'notifications/cancelled');
      expect((withdrawn.message['params'] as { requestId: unknown }).requestId).to.equal(first.message['id']);
      await waitForStatus(client, taskId, 'input_required');

      // Exactly the new attempt's request is outstanding.
      expect(await system.redis.hget(tasks.record(taskId), 'pendingInputs')).to.equal('1');
      expect(await system.redis.hkeys(`${system.prefix}:session:${client.sessionId}:inputs`)).to.deep.equal([
        second.message['id'],
      ]);
      const late = await client.post({
        jsonrpc: '2.0',
        id: first.message['id'],
        result: { action: 'accept', content: { answer: 'too late' } },
      });
      expect(late.status).to.equal(400);
      expect((late.json as { error: { message: string } }).error.message).to.match(/no request .* is waiting/);

      const answered = await client.post({
        jsonrpc: '2.0',
        id: second.message['id'],
        result: { action: 'accept', content: { answer: 'yes' } },
      });
      expect(answered.status).to.equal(202);
      await waitForStatus(client, taskId, 'completed');
      const result = await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'yes' }]);

      const stored = await store.inspect(taskId);
      const statuses = stored?.history.map((entry) => entry.status) ?? [];
      // Attempt 1 asks; attempt 2 starts (withdrawing the request: working), asks, gets the answer, completes.
      expect(statuses.slice(-5)).to.deep.equal(['input_required', 'working', 'input_required', 'working', 'completed']);
      expect(statuses.filter((status) => status === 'completed')).to.have.length(1);
      expect(await system.redis.hget(tasks.record(taskId), 'pendingInputs')).to.equal('0');
      expect(get.events.filter((event) => event.message['method'] === 'notifications/cancelled')).to.have.length(1);
    } finally {
      await get.close();
    }
  });

  it('a first attempt is noted "Running on <worker>." only once it has run RUNNING_NOTE_AFTER_MS: a no-op ends without the note', async () => {
    const client = new McpTestClient(system.apiUrl);
    await client.initialize();
    const quick = String((await client.createTask('wait', { seconds: 0 }))['taskId']);
    const slow = String((await client.createTask('wait', { seconds: 1.5 }))['taskId']);
    const noted = await eventually(async () => {
      const task = await client.call('tasks/get', { taskId: slow });
      return /^Running on \S+\.$/.test(String(task['statusMessage'])) ? task : undefined;
    });
    expect(noted['status']).to.equal('working');
    for (const taskId of [quick, slow]) {
      await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
    }
    const runningNotes = async (taskId: string) =>
      (await store.inspect(taskId))?.history.filter((entry) => entry.statusMessage?.startsWith('Running on')).length;
    expect(await runningNotes(quick)).to.equal(0);
    expect(await runningNotes(slow)).to.equal(1);
    // The first attempt wrote no attempt number: the next one's start would still fence it off.
    expect(await system.redis.hget(tasks.record(slow), 'attempt')).to.equal(null);
  });

  it('a worker that loses its job lock stops its tool; the next attempt runs it and the task ends exactly once', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const task = await client.createTask('wait', { seconds: 3 });
    const taskId = String(task['taskId']);
    const lock = `${system.prefix}:tool-wait:${taskId}:lock`;
    await eventually(async () => ((await system.redis.exists(lock)) === 1 ? true : undefined));
    const worker = system.workers.at(-1);
    if (!worker) throw new Error('no worker');
    const logged = (message: string) => () =>
      worker.records().some((line) => line['message'] === message && line['taskId'] === taskId) || undefined;
    // Someone else holds the lock now (as after a stall longer than the lock): this worker's renewal fails, and
    // once that lock expires, stalled-job recovery hands the job to the next attempt.
    await system.redis.set(lock, 'another-holder', 'PX', 2500);
    await eventually(logged('job lock lost: stopping its tool'), 5000);
    await eventually(
      logged('tool stopped: this worker lost the job lock, so the task is left to the next attempt'),
      5000,
    );

    await waitForStatus(client, taskId, 'completed', 20_000);
    const stored = await store.inspect(taskId);
    const statuses = stored?.history.map((entry) => entry.status) ?? [];
    expect(statuses.filter((status) => status === 'completed' || status === 'failed')).to.deep.equal(['completed']);
    expect(stored?.history.filter((entry) => entry.statusMessage?.startsWith('Running on'))).to.have.length(2);
    expect(await system.redis.hget(tasks.record(taskId), 'attempt')).to.equal('2');
    // The history lists both attempts: the first ended as lost when the second started (nobody noted its end).
    expect(stored?.attempts.map(({ attempt, ending }) => ({ attempt, ending }))).to.deep.equal([
      { attempt: 1, ending: 'lost' },
      { attempt: 2, ending: 'completed' },
    ]);
    const result = await client.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 3s' }]);
  });
});
