// What only pub/sub and the stream itself can deliver on the 2026-07-28 wire, proved with the periodic re-reads
// turned off (RESULT_RECHECK_MS, INPUT_RECHECK_MS at ten minutes): a change a waiter missed would hang the test
// instead of arriving seconds late. Also the keep-alive comments of an idle SSE stream (SSE_KEEPALIVE_MS short).
import { expect } from 'chai';
import {
  modernPost,
  modernRequest,
  modernResult,
  openStream,
  pollModernTask,
  WITH_TASKS,
} from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const NO_RECHECK = '600000';

describe('2026-07-28 streams and wake-ups without periodic re-reads (two api replicas, a worker, real Redis)', function () {
  this.timeout(60_000);
  let system: System;
  let a: string;
  let b: string;
  const capabilities = { ...WITH_TASKS, elicitation: {} };

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: {
        MCPT_TOOLS: './scripts/conformance/tools.ts',
        RESULT_RECHECK_MS: NO_RECHECK,
        INPUT_RECHECK_MS: NO_RECHECK,
        SSE_KEEPALIVE_MS: '200',
      },
    });
    a = system.apis[0]?.url as string;
    b = system.apis[1]?.url as string;
  });
  after(async () => {
    await system?.stop();
  });

  const poll = (url: string, taskId: string, done: (task: Record<string, unknown>) => boolean) =>
    pollModernTask(url, taskId, done, 40_000);

  const keysOf = (task: Record<string, unknown>) => Object.keys((task['inputRequests'] as object | undefined) ?? {});

  it('C26-SSE-2: an idle subscriptions/listen stream gets `:` keep-alive comments, unbuffered', async function () {
    // Two comments take 0.4 s here; the default interval (15 s) would not fit in this timeout.
    this.timeout(20_000);
    const { headers, body } = modernRequest('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const controller = new AbortController();
    const res = await fetch(a, { method: 'POST', headers, body, signal: controller.signal });
    try {
      expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect(res.headers.get('x-accel-buffering')).to.equal('no');
      const reader = res.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
      const decoder = new TextDecoder();
      let text = '';
      // The ack, then nothing happens: only keep-alives can arrive (SSE_KEEPALIVE_MS is 200 here).
      while ((text.match(/^: keep-alive$/gm) ?? []).length < 2) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
      expect(text.startsWith('event: message\ndata: ')).to.equal(true);
      expect(text).to.include('notifications/subscriptions/acknowledged');
    } finally {
      controller.abort();
    }
  });

  it('C26-LOG-1: a call whose _meta asks for logLevel debug is served, and its tool logs get no notifications/message', async () => {
    const reply = await modernPost(
      a,
      'tools/call',
      { name: 'test_logging_tool', arguments: {} },
      {
        meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/logLevel': 'debug',
          progressToken: 'log-1',
        },
      },
    );
    expect(reply.status).to.equal(200);
    expect(reply.messages.filter((message) => message['method'] === 'notifications/message')).to.deep.equal([]);
    expect(reply.body.result?.['content']).to.deep.equal([{ type: 'text', text: 'Logging tool completed' }]);
  });

  it('X-NTF-1, X-UPD-5: a listen stream sees the second of two questions and a partial tasks/update at once, though the status stays input_required', async () => {
    const created = await modernResult(a, 'tools/call', { name: 'multi_input', arguments: {} }, { capabilities });
    const taskId = created['taskId'] as string;
    const stream = await openStream(
      b,
      'subscriptions/listen',
      { notifications: { taskIds: [taskId] } },
      {
        capabilities: WITH_TASKS,
      },
    );
    try {
      expect((await stream.next())['method']).to.equal('notifications/subscriptions/acknowledged');
      let event: Record<string, unknown>;
      // The second question comes while the task is input_required already: the status does not move.
      do event = (await stream.next())['params'] as Record<string, unknown>;
      while (keysOf(event).length < 2);
      const [first, second] = keysOf(event);
      await modernResult(
        a,
        'tasks/update',
        { taskId, inputResponses: { [first as string]: { action: 'accept', content: { name: 'n' } } } },
        { capabilities: WITH_TASKS },
      );
      // One answered, one left: still input_required, and the stream shows the one left.
      do event = (await stream.next())['params'] as Record<string, unknown>;
      while (keysOf(event).length !== 1);
      expect(event['status']).to.equal('input_required');
      expect(keysOf(event)).to.deep.equal([second]);
      await modernResult(
        b,
        'tasks/update',
        { taskId, inputResponses: { [second as string]: { action: 'accept', content: { name: 'm' } } } },
        { capabilities: WITH_TASKS },
      );
      do event = (await stream.next())['params'] as Record<string, unknown>;
      while (event['status'] !== 'completed');
    } finally {
      stream.close();
    }
  });

  it('T-RSRC-1: what one request may name is bounded: at most 64 answers in a tasks/update, 100 tasks on a listen stream', async () => {
    const created = await modernResult(
      a,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 0 } },
      {
        capabilities: WITH_TASKS,
      },
    );
    const taskId = created['taskId'] as string;
    const answers = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, { action: 'cancel' }]));
    const update = await modernPost(
      a,
      'tasks/update',
      { taskId, inputResponses: answers },
      { capabilities: WITH_TASKS },
    );
    expect(update.body.error?.code).to.equal(-32602);
    expect(update.body.error?.message).to.match(/at most 64/);
    const listen = await modernPost(
      b,
      'subscriptions/listen',
      { notifications: { taskIds: Array.from({ length: 101 }, (_, i) => `t${i}`) } },
      { capabilities: WITH_TASKS },
    );
    expect(listen.body.error?.code).to.equal(-32602);
    expect(listen.body.error?.message).to.match(/at most 100/);
  });

  it('X-UPD-1: after tasks/update on the other replica the waiting tool resumes and the task completes', async () => {
    const created = await modernResult(
      a,
      'tools/call',
      { name: 'confirm_delete', arguments: { filename: 'w.txt' } },
      { capabilities },
    );
    const taskId = created['taskId'] as string;
    const waiting = await poll(b, taskId, (task) => keysOf(task).length === 1);
    await modernResult(
      b,
      'tasks/update',
      { taskId, inputResponses: { [keysOf(waiting)[0] as string]: { action: 'accept', content: { confirm: true } } } },
      { capabilities: WITH_TASKS },
    );
    const done = await poll(a, taskId, (task) => task['status'] === 'completed');
    expect((done['result'] as Record<string, unknown>)['content']).to.deep.equal([
      { type: 'text', text: 'Deleted w.txt' },
    ]);
  });

  it('C26-MRTR-2, X-COMP-1: MRTR retries on the other replica are answered by wake-ups (synchronous, then composed with a task)', async () => {
    const plain = { name: 'test_input_required_result_elicitation', arguments: {} };
    const round1 = await modernResult(a, 'tools/call', plain, { capabilities: { elicitation: {} } });
    expect(round1['resultType']).to.equal('input_required');
    const done = await modernResult(
      b,
      'tools/call',
      {
        ...plain,
        inputResponses: { user_name: { action: 'accept', content: { name: 'Wake' } } },
        requestState: round1['requestState'],
      },
      { capabilities: { elicitation: {} } },
    );
    expect(done['content']).to.deep.equal([{ type: 'text', text: 'Hello, Wake!' }]);

    const composed = { name: 'test_tool_with_task', arguments: {} };
    const first = await modernResult(a, 'tools/call', composed, { capabilities });
    const [key] = Object.keys(first['inputRequests'] as object);
    const created = await modernResult(
      b,
      'tools/call',
      {
        ...composed,
        inputResponses: { [key as string]: { action: 'accept', content: { name: 'Wake' } } },
        requestState: first['requestState'],
      },
      { capabilities },
    );
    expect(created['resultType']).to.equal('task');
    await poll(a, created['taskId'] as string, (task) => task['status'] === 'completed');
  });
});
