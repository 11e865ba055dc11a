// input_required end to end across replicas: a tool asks the client (elicitation, sampling), the request reaches
// the client on a tasks/result or GET stream of one replica, the answer is POSTed to another, and the worker
// resumes. Also status and progress notifications, and stream resumption after a replica dies.
import { expect } from 'chai';
import { RELATED_TASK_META_KEY } from '@mcp-tasks/protocol';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startApi, startSystem, type System } from '../support/in-process.ts';
import { spawnApi } from '../support/processes.ts';
import { SseConnection } from '../support/sse-client.ts';

const CLIENT_CAPABILITIES = { elicitation: { form: {} }, sampling: {} };

describe('input_required, notifications and resumable streams (2 api replicas, 1 worker)', function () {
  this.timeout(60_000);
  let system: System;
  let a: McpTestClient;
  let b: McpTestClient;

  before(async () => {
    system = await startSystem({ apis: 2, env: { RESULT_RECHECK_MS: '1000', INPUT_RECHECK_MS: '1000' } });
  });
  after(async () => {
    await system?.stop();
  });
  beforeEach(async () => {
    a = new McpTestClient(String(system.apis[0]?.url));
    await a.initialize('2025-11-25', CLIENT_CAPABILITIES);
    // The same session, through the other replica.
    b = new McpTestClient(String(system.apis[1]?.url));
    b.sessionId = a.sessionId;
  });

  function headers(client: McpTestClient, extra: Record<string, string> = {}): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': String(client.sessionId),
      'mcp-protocol-version': '2025-11-25',
      ...extra,
    };
  }

  function openResultStream(client: McpTestClient, taskId: unknown, id: string | number = 99): Promise<SseConnection> {
    return SseConnection.open(client.url, {
      method: 'POST',
      headers: headers(client),
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }),
    });
  }

  function openGetStream(client: McpTestClient, lastEventId?: string): Promise<SseConnection> {
    const extra: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId) extra['last-event-id'] = lastEventId;
    return SseConnection.open(client.url, { method: 'GET', headers: headers(client, extra) });
  }

  const isRequest = (method: string) => (event: { message: Record<string, unknown> }) =>
    event.message['method'] === method && 'id' in event.message;
  const isStatus = (status: string) => (event: { message: Record<string, unknown> }) =>
    event.message['method'] === 'notifications/tasks/status' &&
    (event.message['params'] as { status?: string }).status === status;

  async function waitForStatus(client: McpTestClient, taskId: unknown, status: string) {
    return eventually(async () => {
      const task = await client.call('tasks/get', { taskId });
      return task['status'] === status ? task : undefined;
    });
  }

  it('T-INPUT-1, T-INPUT-2, T-INPUT-3, T-INPUT-4: an elicitation is delivered on tasks/result at A, answered at B, and the task resumes', async () => {
    const task = await a.createTask('ask_user', { question: 'Favourite colour?' });
    await waitForStatus(a, task['taskId'], 'input_required');
    const stream = await openResultStream(a, task['taskId']);
    const request = await stream.next(isRequest('elicitation/create'));
    const params = request.message['params'] as Record<string, unknown>;
    expect(params['message']).to.equal('Favourite colour?');
    expect(params['mode']).to.equal('form');
    expect(params['_meta']).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: task['taskId'] } });
    expect(request.message['id'])
      .to.be.a('string')
      .and.match(/^mcpt-/);

    const answered = await b.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'teal' } },
    });
    expect(answered.status).to.equal(202);
    const final = await stream.next((event) => event.message['id'] === 99, 10_000);
    expect(final.message['result']).to.deep.include({ content: [{ type: 'text', text: 'teal' }] });
    await stream.finished();
    const statuses = stream.events
      .filter((event) => event.message['method'] === 'notifications/tasks/status')
      .map((event) => (event.message['params'] as { status: string }).status);
    expect(statuses).to.include.members(['working', 'completed']);
    expect((await b.call('tasks/get', { taskId: task['taskId'] }))['status']).to.equal('completed');
    const fromB = await b.call('tasks/result', { taskId: task['taskId'] });
    expect(fromB['content']).to.deep.equal([{ type: 'text', text: 'teal' }]);
  });

  it('T-NOTIFY-1, T-META-3: notifications/tasks/status carry the whole Task and no related-task _meta', async () => {
    const task = await a.createTask('wait', { seconds: 0.5 });
    const stream = await openResultStream(a, task['taskId']);
    const completed = await stream.next(isStatus('completed'));
    const params = completed.message['params'] as Record<string, unknown>;
    expect(params).to.include({
      taskId: task['taskId'],
      status: 'completed',
      ttl: task['ttl'],
      pollInterval: task['pollInterval'],
      createdAt: task['createdAt'],
    });
    expect(params['lastUpdatedAt']).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(params).to.not.have.property('_meta');
    expect(completed.message).to.not.have.property('_meta');
    const viaGet = await a.call('tasks/get', { taskId: task['taskId'] });
    expect(viaGet['lastUpdatedAt']).to.equal(params['lastUpdatedAt']);
    await stream.finished();
  });

  it('T-PROG-1: the progressToken of tools/call stays valid: progress notifications reach the client during the task', async () => {
    const created = await a.call('tools/call', {
      name: 'wait',
      arguments: { seconds: 2.2 },
      task: {},
      _meta: { progressToken: 'p-1' },
    });
    const taskId = (created['task'] as { taskId: string }).taskId;
    const stream = await openResultStream(a, taskId);
    await stream.finished(10_000);
    const progress = stream.events.filter((event) => event.message['method'] === 'notifications/progress');
    expect(progress.length).to.be.at.least(2);
    for (const event of progress) {
      const params = event.message['params'] as Record<string, unknown>;
      expect(params['progressToken']).to.equal('p-1');
      expect(params['_meta']).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId } });
    }
  });

  it('T-INPUT-3: without an open tasks/result stream the request arrives on the GET stream, once', async () => {
    const get = await openGetStream(a);
    const task = await a.createTask('ask_user', { question: 'Name?' });
    const request = await get.next(isRequest('elicitation/create'));
    expect((request.message['params'] as { _meta: unknown })['_meta']).to.deep.equal({
      [RELATED_TASK_META_KEY]: { taskId: task['taskId'] },
    });
    await b.post({ jsonrpc: '2.0', id: request.message['id'], result: { action: 'decline' } });
    const result = await b.call(
      'tasks/result',
      { taskId: task['taskId'] },
      { headers: { accept: 'application/json' } },
    );
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'The user did not answer (decline).' }]);
    expect(get.events.filter(isRequest('elicitation/create'))).to.have.length(1);
    await get.close();
  });

  it('sampling: summarize asks the client model and returns its text', async () => {
    const task = await a.createTask('summarize', { text: 'A very long text about Redis streams.' });
    const stream = await openResultStream(b, task['taskId'], 7);
    const request = await stream.next(isRequest('sampling/createMessage'));
    const params = request.message['params'] as { messages: { content: { text: string } }[]; maxTokens: number };
    expect(params.messages[0]?.content.text).to.contain('Redis streams');
    await a.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { role: 'assistant', model: 'test', content: { type: 'text', text: 'It is about streams.' } },
    });
    const final = await stream.next((event) => event.message['id'] === 7);
    expect((final.message['result'] as { content: unknown }).content).to.deep.equal([
      { type: 'text', text: 'It is about streams.' },
    ]);
  });

  it('T-GET-4: tasks/get of a running task answers plain JSON even when the client accepts SSE', async () => {
    const task = await a.createTask('wait', { seconds: 1 });
    const reply = await a.post({ jsonrpc: '2.0', id: 5, method: 'tasks/get', params: { taskId: task['taskId'] } });
    expect(reply.headers.get('content-type')).to.match(/^application\/json/);
    expect((reply.json as { result: { status: string } }).result.status).to.equal('working');
  });

  it('T-RES-2, T-INPUT-3: tasks/result and plain calls answer JSON when done within RESULT_STREAM_AFTER_MS, else stream from the request on', async () => {
    const patient = await startApi({ ...system.env, RESULT_STREAM_AFTER_MS: '1500' });
    try {
      const client = new McpTestClient(patient.url);
      client.sessionId = a.sessionId;
      const quick = await a.createTask('wait', { seconds: 0 });
      const reply = await client.post({ jsonrpc: '2.0', id: 7, method: 'tasks/result', params: quick });
      expect(reply.headers.get('content-type')).to.match(/^application\/json/);
      expect((reply.json as { result: { content: unknown } }).result.content).to.deep.equal([
        { type: 'text', text: 'Waited 0s' },
      ]);

      // Progress at 1 s comes during the wait, progress at 2 s and the end after the stream began: all arrive.
      const created = await a.call('tools/call', {
        name: 'wait',
        arguments: { seconds: 2.2 },
        task: {},
        _meta: { progressToken: 'since' },
      });
      const taskId = (created['task'] as { taskId: string }).taskId;
      const stream = await openResultStream(client, taskId, 'slow');
      await stream.finished(10_000);
      const steps = stream.events
        .filter((event) => event.message['method'] === 'notifications/progress')
        .map((event) => (event.message['params'] as { progress: number }).progress);
      // Step 0 is there too when the worker began after the request.
      expect(steps.filter((step) => step > 0)).to.deep.equal([1, 2]);
      expect(stream.events.at(-1)?.message['id']).to.equal('slow');

      // A plain tools/call waits the same way: JSON when it ends in time, else a stream from the call on.
      const plain = await client.post({
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/call',
        params: { name: 'wait', arguments: { seconds: 0 } },
      });
      expect(plain.headers.get('content-type')).to.match(/^application\/json/);
      expect((plain.json as { result: { content: unknown } }).result.content).to.deep.equal([
        { type: 'text', text: 'Waited 0s' },
      ]);
      const plainStream = await SseConnection.open(client.url, {
        method: 'POST',
        headers: headers(client),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'plain-slow',
          method: 'tools/call',
          params: { name: 'wait', arguments: { seconds: 2.2 }, _meta: { progressToken: 'plain' } },
        }),
      });
      await plainStream.finished(10_000);
      const plainSteps = plainStream.events
        .filter((event) => event.message['method'] === 'notifications/progress')
        .map((event) => (event.message['params'] as { progress: number }).progress);
      expect(plainSteps.filter((step) => step > 0)).to.deep.equal([1, 2]);
      expect(plainStream.events.at(-1)?.message['id']).to.equal('plain-slow');
    } finally {
      await patient.stop();
    }
  });

  it('T-RES-2, T-INPUT-3: a task that needs its client streams its request at once, however long RESULT_STREAM_AFTER_MS is', async () => {
    // The longest wait the api accepts: a reply that waited for it would miss the request's 10 s window below,
    // so the test needs no clock of its own.
    const patient = await startApi({ ...system.env, RESULT_STREAM_AFTER_MS: '60000' });
    try {
      const client = new McpTestClient(patient.url);
      client.sessionId = a.sessionId;
      const asking = await a.createTask('ask_user', { question: 'Now?' });
      const withRequest = await openResultStream(client, asking['taskId']);
      const request = await withRequest.next(isRequest('elicitation/create'), 10_000);
      await b.post({
        jsonrpc: '2.0',
        id: request.message['id'],
        result: { action: 'accept', content: { answer: 'y' } },
      });
      await withRequest.finished();
    } finally {
      await patient.stop();
    }
  });
  it('T-META-1: messages related to a task carry the related-task _meta: its requests, its progress and the tasks/result answer', async () => {
    const created = await a.call('tools/call', {
      name: 'ask_user',
      arguments: { question: 'Meta?' },
      task: {},
      _meta: { progressToken: 9 },
    });
    const taskId = (created['task'] as { taskId: string }).taskId;
    const stream = await openResultStream(a, taskId, 'meta');
    const request = await stream.next(isRequest('elicitation/create'));
    expect((request.message['params'] as { _meta: unknown })._meta).to.deep.equal({
      [RELATED_TASK_META_KEY]: { taskId },
    });
    await b.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'yes' } },
    });
    const final = await stream.next((event) => event.message['id'] === 'meta');
    expect((final.message['result'] as { _meta: unknown })._meta).to.deep.equal({
      [RELATED_TASK_META_KEY]: { taskId },
    });
    // Exempt by T-META-3: status notifications carry the task id in their params instead.
    for (const event of stream.events.filter(isStatus('completed')))
      expect(event.message).to.not.have.nested.property('params._meta');
  });

  it('T-CAP-3, T-CLIENT-2: a client that runs elicitations as tasks gets them task-augmented and is asked tasks/result for the answer', async () => {
    const client = new McpTestClient(String(system.apis[0]?.url));
    await client.initialize('2025-11-25', {
      elicitation: { form: {} },
      tasks: { requests: { elicitation: { create: {} } } },
    });
    const task = await client.createTask('ask_user', { question: 'As a task?' });
    const stream = await openResultStream(client, task['taskId'], 'outer');
    const request = await stream.next(isRequest('elicitation/create'));
    const params = request.message['params'] as { task?: { ttl?: number }; _meta?: unknown };
    expect(params.task?.ttl).to.be.a('number').above(0);
    expect(params._meta).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: task['taskId'] } });
    const now = new Date().toISOString();
    await client.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { task: { taskId: 'client-task-1', status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60_000 } },
    });
    const fetch = await stream.next(isRequest('tasks/result'));
    expect(fetch.message['params']).to.deep.equal({ taskId: 'client-task-1' });
    await client.post({
      jsonrpc: '2.0',
      id: fetch.message['id'],
      result: {
        action: 'accept',
        content: { answer: 'via a client task' },
        _meta: { [RELATED_TASK_META_KEY]: { taskId: 'client-task-1' } },
      },
    });
    const final = await stream.next((event) => event.message['id'] === 'outer');
    expect((final.message['result'] as { content: unknown }).content).to.deep.equal([
      { type: 'text', text: 'via a client task' },
    ]);
  });

  it('a response for an unknown, foreign or already answered request id is rejected with 400 and changes nothing', async () => {
    const unknown = await a.post({ jsonrpc: '2.0', id: 'mcpt-00000000-0000-4000-8000-000000000000', result: {} });
    expect(unknown.status).to.equal(400);
    expect((unknown.json as { error: { code: number; message: string } }).error.message).to.match(
      /no request .* is waiting/,
    );

    const task = await a.createTask('ask_user', { question: 'Secret?' });
    const stream = await openResultStream(a, task['taskId']);
    const request = await stream.next(isRequest('elicitation/create'));
    const stranger = await McpTestClient.connect(String(system.apis[1]?.url));
    const foreign = await stranger.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'hijack' } },
    });
    expect(foreign.status).to.equal(400);
    expect((await a.call('tasks/get', { taskId: task['taskId'] }))['status']).to.equal('input_required');

    expect(
      (
        await b.post({
          jsonrpc: '2.0',
          id: request.message['id'],
          result: { action: 'accept', content: { answer: 'mine' } },
        })
      ).status,
    ).to.equal(202);
    const again = await b.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'twice' } },
    });
    expect(again.status).to.equal(400);
    // Already answered, or already consumed by the worker: either way a rejection that changes nothing.
    expect((again.json as { error: { message: string } }).error.message).to.match(/already answered|no request/);
    const final = await stream.next((event) => event.message['id'] === 99);
    expect((final.message['result'] as { content: unknown }).content).to.deep.equal([{ type: 'text', text: 'mine' }]);
  });

  it('T-CANCEL-2: a task waiting for input can be cancelled; its request is withdrawn with notifications/cancelled', async () => {
    const get = await openGetStream(a);
    const task = await a.createTask('ask_user', { question: 'Will you answer?' });
    const request = await get.next(isRequest('elicitation/create'));
    const cancelled = await b.call('tasks/cancel', { taskId: task['taskId'] });
    expect(cancelled['status']).to.equal('cancelled');
    await eventually(async () =>
      (await system.redis.hlen(`${system.prefix}:session:${a.sessionId}:inputs`)) === 0 ? true : undefined,
    );
    expect((await a.call('tasks/get', { taskId: task['taskId'] }))['status']).to.equal('cancelled');
    const withdrawn = await get.next((event) => event.message['method'] === 'notifications/cancelled');
    expect(withdrawn.message['params']).to.deep.equal({
      requestId: request.message['id'],
      reason: 'The task no longer needs the answer.',
    });
    await get.close();
  });

  it("T-CLIENT-2, T-CANCEL-2: cancelling a task also cancels the client's own task that runs its elicitation", async () => {
    const client = new McpTestClient(String(system.apis[0]?.url));
    await client.initialize('2025-11-25', {
      elicitation: { form: {} },
      tasks: { cancel: {}, requests: { elicitation: { create: {} } } },
    });
    const get = await openGetStream(client);
    const task = await client.createTask('ask_user', { question: 'Cancel me?' });
    const request = await get.next(isRequest('elicitation/create'));
    const now = new Date().toISOString();
    await client.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { task: { taskId: 'client-task-2', status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60_000 } },
    });
    const fetch = await get.next(isRequest('tasks/result'));
    await client.call('tasks/cancel', { taskId: task['taskId'] });
    const cancel = await get.next(isRequest('tasks/cancel'));
    expect(cancel.message['params']).to.deep.equal({ taskId: 'client-task-2' });
    const answer = await client.post({
      jsonrpc: '2.0',
      id: cancel.message['id'],
      result: { taskId: 'client-task-2', status: 'cancelled', createdAt: now, lastUpdatedAt: now, ttl: 60_000 },
    });
    expect(answer.status).to.equal(202);
    const withdrawn = await get.next((event) => event.message['method'] === 'notifications/cancelled');
    expect((withdrawn.message['params'] as { requestId: unknown }).requestId).to.equal(fetch.message['id']);
    await get.close();
  });

  it('a client without the elicitation capability gets a failed task that says why', async () => {
    const plain = await McpTestClient.connect(system.apiUrl);
    const task = await plain.createTask('ask_user', { question: 'Hello?' });
    const done = await eventually(async () => {
      const current = await plain.call('tasks/get', { taskId: task['taskId'] });
      return current['status'] === 'failed' ? current : undefined;
    });
    expect(done['statusMessage']).to.match(/did not declare the 'elicitation' capability/);
  });

  it('a replica dying under an open tasks/result stream: the client resumes on the other with Last-Event-ID and misses nothing', async () => {
    // A process of its own: the test kills it.
    const victim = await spawnApi(system.env);
    const client = new McpTestClient(victim.url);
    client.sessionId = a.sessionId;
    const created = await a.call('tools/call', {
      name: 'wait',
      arguments: { seconds: 2.5 },
      task: {},
      _meta: { progressToken: 'resume' },
    });
    const taskId = (created['task'] as { taskId: string }).taskId;
    const stream = await openResultStream(client, taskId, 'result-1');
    const first = await stream.next((event) => event.message['method'] === 'notifications/progress');
    await victim.stop('SIGKILL');
    await stream.finished();
    const lastId = stream.events.filter((event) => event.id).at(-1)?.id ?? first.id;
    const resumed = await openGetStream(b, lastId);
    const final = await resumed.next((event) => event.message['id'] === 'result-1', 15_000);
    expect((final.message['result'] as { content: unknown }).content).to.deep.equal([
      { type: 'text', text: 'Waited 2.5s' },
    ]);
    const seen = [...stream.events, ...resumed.events].filter(
      (event) => event.message['method'] === 'notifications/progress',
    );
    const steps = seen.map((event) => (event.message['params'] as { progress: number }).progress);
    // Every step from the first one seen to the last, each exactly once, across the two connections.
    const firstStep = steps[0] ?? 0;
    expect(steps).to.deep.equal(Array.from({ length: 3 - firstStep }, (_, i) => firstStep + i));
  });
});
