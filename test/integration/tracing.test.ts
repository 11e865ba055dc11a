// OpenTelemetry traces across real api and worker processes (docs/observability.md): the client's W3C trace
// context (SEP-414 `_meta` keys, or the traceparent/tracestate headers) parents the api request span; the job
// carries it to the worker, whose queue wait, tool run, input wait and final transition join the same trace, all
// received by a local OTLP/HTTP endpoint, on both eras. Without OTEL_EXPORTER_OTLP_ENDPOINT nothing is carried or sent.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { MODERN, modernPost, WITH_TASKS } from '../support/modern-client.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startSystem, type ChildHandle, type System } from '../support/processes.ts';
import { openTaskResultStream } from '../support/sse-client.ts';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('tracing: one trace per task across api and worker (OTLP/HTTP)', function () {
  this.timeout(90_000);
  let receiver: OtlpReceiver;
  let system: System;

  before(async () => {
    receiver = await startOtlpReceiver();
    system = await startSystem({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        // The demo tools, and tools with steps and child calls (docs/durable-execution.md).
        MCPT_DEMO: '1',
        MCPT_TOOLS: './test/fixtures/durable/tools.ts,./examples/fan-out/src/tools.ts',
      },
    });
  });
  after(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const spansOf = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
  const one = (spans: ReceivedSpan[], name: string) => {
    const found = spans.filter((span) => span.name === name);
    expect(found, `spans named '${name}' in ${spans.map((s) => s.name).join(', ')}`).to.have.length(1);
    return found[0] as ReceivedSpan;
  };

  it('SEP-414 _meta traceparent: api request, queue wait, tool run, input wait and settle form one trace', async () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const client = new McpTestClient(system.apiUrl);
    await client.initialize('2025-11-25', { elicitation: { form: {} } });
    const created = await client.call('tools/call', {
      name: 'ask_user',
      arguments: { question: 'Which colour?' },
      task: {},
      _meta: { traceparent: `00-${traceId}-${clientSpan}-01`, tracestate: 'vendor=abc' },
    });
    const taskId = (created['task'] as { taskId: string }).taskId;
    const stream = await openTaskResultStream(client, taskId, 'result');
    const request = await stream.next((event) => event.message['method'] === 'elicitation/create');
    await client.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'teal' } },
    });
    await stream.next((event) => event.message['id'] === 'result', 20_000);
    await stream.finished();

    const names = [
      'tools/call ask_user',
      'queue wait',
      'execute_tool ask_user',
      'input wait elicitation/create',
      'settle completed',
    ];
    const spans = await eventually(() => {
      const found = spansOf(traceId);
      return names.every((name) => found.some((span) => span.name === name)) ? found : undefined;
    }, 30_000);
    const api = one(spans, 'tools/call ask_user');
    const wait = one(spans, 'queue wait');
    const run = one(spans, 'execute_tool ask_user');
    const input = one(spans, 'input wait elicitation/create');
    const settle = one(spans, 'settle completed');

    expect(api.parentSpanId).to.equal(clientSpan);
    expect(api.service).to.equal('mcp-task-runner-api');
    expect(api.attributes).to.include({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'ask_user',
      'mcp.task.id': taskId,
    });
    for (const span of [wait, run, input, settle]) expect(span.service).to.equal('mcp-task-runner-worker');
    // The client's tracestate travels with the context, through the job, to the worker's spans.
    for (const span of [api, wait, run, input, settle]) expect(span.traceState).to.equal('vendor=abc');
    expect(wait.parentSpanId).to.equal(api.spanId);
    expect(run.parentSpanId).to.equal(api.spanId);
    expect(run.attributes).to.include({ 'mcp.task.id': taskId, 'mcp.task.attempt': 1, 'mcp.task.status': 'completed' });
    expect(input.parentSpanId).to.equal(run.spanId);
    expect(settle.parentSpanId).to.equal(run.spanId);
    expect(settle.attributes).to.include({ 'mcp.task.transition': 'applied' });
    // Span times come from each process's own clock: only the structure is compared, not the order of times.
    expect(wait.endNs >= wait.startNs).to.equal(true);
    expect(receiver.contentTypes).to.satisfy((types: string[]) =>
      types.every((type) => type.startsWith('application/json')),
    );
  });

  it("traceparent header: tools/call and tasks/get are spans of the caller's trace", async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${traceId}-${parent}-01` };
    const task = await client.createTask('wait', { seconds: 0.1 });
    await eventually(async () => {
      const status = (await client.call('tasks/get', { taskId: task['taskId'] }))['status'];
      return status === 'working' ? undefined : status;
    });
    const spans = await eventually(() => {
      const found = spansOf(traceId);
      return found.some((span) => span.name.startsWith('settle ')) && found.some((s) => s.name === 'tasks/get')
        ? found
        : undefined;
    }, 30_000);
    const get = spans.find((span) => span.name === 'tasks/get') as ReceivedSpan;
    expect(get.parentSpanId).to.equal(parent);
    const call = one(spans, 'tools/call wait');
    expect(call.parentSpanId).to.equal(parent);
    expect(one(spans, 'settle completed').attributes['mcp.task.status']).to.equal('completed');
  });

  it('tasks/* spans name their task (mcp.task.id) and link to its trace, whatever trace the client sends them in', async () => {
    const taskTrace = hex(16);
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${taskTrace}-${hex(8)}-01` };
    const taskId = String((await client.createTask('wait', { seconds: 30 }))['taskId']);
    const later = { 'tasks/get': hex(16), 'tasks/cancel': hex(16), 'tasks/result': hex(16) };
    for (const [method, traceId] of Object.entries(later)) {
      client.headers = { traceparent: `00-${traceId}-${hex(8)}-01` };
      await client.rpc(method, { taskId });
    }
    const spans = await eventually(() => {
      const all = [taskTrace, ...Object.values(later)].map(spansOf);
      return all.every((found) => found.length > 0) ? all.flat() : undefined;
    }, 30_000);
    const call = one(spans, 'tools/call wait');
    expect(call.traceId).to.equal(taskTrace);
    for (const [method, traceId] of Object.entries(later)) {
      const span = one(spansOf(traceId), method);
      expect(span.attributes['mcp.task.id'], method).to.equal(taskId);
      expect(span.links, method).to.deep.include({ traceId: taskTrace, spanId: call.spanId });
    }
  });

  it('span names stay a bounded set: a method no wire serves and a tool the catalog lacks are named _OTHER', async () => {
    const traceId = hex(16);
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${traceId}-${hex(8)}-01` };
    const method = `no/such-method-${hex(4)}`;
    const tool = `no-such-tool-${hex(4)}`;
    await client.rpc(method);
    await client.rpc('tools/call', { name: tool, arguments: {}, task: {} });
    await client.rpc('tools/call', { name: 'wait', arguments: { seconds: 0 }, task: {} });
    const requests = () => spansOf(traceId).filter((span) => span.service === 'mcp-task-runner-api');
    const spans = await eventually(() => (requests().length === 3 ? requests() : undefined), 30_000);
    expect(spans.map((span) => span.name).sort()).to.deep.equal(['_OTHER', 'tools/call _OTHER', 'tools/call wait']);
    // What the client sent stays in the attributes, for whoever looks into one span.
    expect(one(spans, '_OTHER').attributes['mcp.method.name']).to.equal(method);
    expect(one(spans, 'tools/call _OTHER').attributes['gen_ai.tool.name']).to.equal(tool);

    // A job any producer queued, naming a tool the worker does not serve: its attempt's span is bounded too.
    const jobTrace = hex(16);
    const redis = new Redis(system.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('tool-wait', { connection: redis, prefix: system.prefix });
    try {
      const data = { taskId: randomUUID(), tool, arguments: {}, trace: { traceparent: `00-${jobTrace}-${hex(8)}-01` } };
      await queue.add(tool, data, { jobId: data.taskId, removeOnComplete: true, removeOnFail: true });
      const run = await eventually(
        () => spansOf(jobTrace).find((span) => span.name.startsWith('execute_tool')),
        30_000,
      );
      expect(run.name).to.equal('execute_tool _OTHER');
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });

  it("each step and child call is a span of the attempt, by name, in order; the child task's run is under its call's span", async () => {
    const traceId = hex(16);
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${traceId}-${hex(8)}-01` };
    const scratch = mkdtempSync(join(tmpdir(), 'mcpt-tracing-'));
    try {
      const args = { ledger: join(scratch, 'ledger'), gate: join(scratch, 'gate') };
      const taskId = String((await client.createTask('charge_then_ship', args))['taskId']);
      await client.call('tasks/result', { taskId });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    const names = ['execute_tool charge_then_ship', 'call_tool', 'execute_tool count_words', 'settle completed'];
    const spans = await eventually(() => {
      const found = spansOf(traceId);
      return names.every((name) => found.some((span) => span.name === name)) &&
        found.filter((span) => span.name === 'step').length === 2
        ? found
        : undefined;
    }, 30_000);
    const run = one(spans, 'execute_tool charge_then_ship');
    const steps = spans.filter((span) => span.name === 'step').sort((a, b) => Number(a.startNs - b.startNs));
    const call = one(spans, 'call_tool');
    const ordered = [...steps, call].sort((a, b) => Number(a.startNs - b.startNs));
    expect(ordered.map((span) => span.attributes['mcp.step.name'] ?? span.attributes['mcp.call.key'])).to.deep.equal([
      'charge',
      'count_words#1',
      'ship',
    ]);
    for (const span of ordered) expect(span.parentSpanId).to.equal(run.spanId);
    expect(steps[0]?.attributes).to.include({ 'mcp.step.replayed': false, 'mcp.step.bytes': 14 });
    expect(call.attributes).to.include({ 'gen_ai.tool.name': 'count_words', 'mcp.call.replayed': false });
    const childRun = one(spans, 'execute_tool count_words');
    expect(childRun.attributes['mcp.task.id']).to.equal(call.attributes['mcp.child_task.id']);
    expect(childRun.parentSpanId).to.equal(call.spanId);
  });

  it('2026-07-28: the _meta traceparent/tracestate of a stateless tools/call (tasks extension) and the traceparent header of its tasks/get join one trace', async () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const created = await modernPost(
      system.apiUrl,
      'tools/call',
      { name: 'wait', arguments: { seconds: 0.1 } },
      {
        meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
          'io.modelcontextprotocol/clientInfo': { name: 'tracing-test', version: '1.0.0' },
          traceparent: `00-${traceId}-${clientSpan}-01`,
          tracestate: 'vendor=modern',
        },
      },
    );
    const taskId = String(created.body.result?.['taskId']);
    expect(created.body.result?.['resultType']).to.equal('task');
    const getParent = hex(8);
    let last: unknown;
    // Polled as a client would (a tight loop would meet the lookup rate limit).
    await eventually(
      async () => {
        const got = await modernPost(
          system.apiUrl,
          'tasks/get',
          { taskId },
          { capabilities: WITH_TASKS, headers: { traceparent: `00-${traceId}-${getParent}-01` } },
        );
        last = got.body;
        return got.body.result?.['status'] === 'completed' ? true : undefined;
      },
      20_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last tasks/get: ${JSON.stringify(last)}`);
    });
    const spans = await eventually(() => {
      const found = spansOf(traceId);
      return found.some((span) => span.name === 'settle completed') &&
        found.some((span) => span.name === 'tasks/get' && span.parentSpanId === getParent)
        ? found
        : undefined;
    }, 20_000);
    const api = one(spans, 'tools/call wait');
    expect(api.parentSpanId).to.equal(clientSpan);
    expect(api.traceState).to.equal('vendor=modern');
    expect(api.attributes).to.include({
      'mcp.protocol.version': MODERN,
      'mcp.method.name': 'tools/call',
      'mcp.task.id': taskId,
    });
    const get = spans.find((span) => span.name === 'tasks/get' && span.parentSpanId === getParent) as ReceivedSpan;
    expect(get.attributes['mcp.task.id']).to.equal(taskId);
    expect(get.links).to.deep.include({ traceId, spanId: api.spanId });
    const wait = one(spans, 'queue wait');
    const run = one(spans, 'execute_tool wait');
    const settle = one(spans, 'settle completed');
    expect(wait.parentSpanId).to.equal(api.spanId);
    expect(run.parentSpanId).to.equal(api.spanId);
    expect(run.attributes).to.include({ 'mcp.task.id': taskId, 'mcp.task.attempt': 1 });
    expect(settle.parentSpanId).to.equal(run.spanId);
    for (const span of [wait, run, settle]) {
      expect(span.service).to.equal('mcp-task-runner-worker');
      expect(span.traceState).to.equal('vendor=modern');
    }
  });
});

describe('tracing: a task run twice (a worker lost its job lock; 1 s locks)', function () {
  this.timeout(90_000);
  let receiver: OtlpReceiver;
  let system: System;

  before(async () => {
    receiver = await startOtlpReceiver();
    system = await startSystem({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        WORKER_LOCK_DURATION_MS: '1000',
        WORKER_STALLED_INTERVAL_MS: '1000',
      },
    });
  });
  after(async () => {
    await system?.stop();
    await receiver?.close();
  });

  it("each attempt is its own execute_tool span in the task's trace (attempt 1 stopped, attempt 2 settles)", async () => {
    const traceId = hex(16);
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${traceId}-${hex(8)}-01` };
    const task = await client.createTask('wait', { seconds: 3 });
    const taskId = String(task['taskId']);
    // Someone else takes the job's lock (as after a stall longer than the lock): the worker stops its tool, and
    // stalled-job recovery hands the job to a second attempt (attempts.test.ts has the details).
    const lock = `${system.prefix}:tool-wait:${taskId}:lock`;
    await eventually(async () => ((await system.redis.exists(lock)) === 1 ? true : undefined));
    await system.redis.set(lock, 'another-holder', 'PX', 2500);
    const spans = await twoRunsSettled(traceId);
    const api = spans.find((span) => span.name === 'tools/call wait') as ReceivedSpan;
    const runs = spans
      .filter((span) => span.name === 'execute_tool wait')
      .sort((a, b) => Number(a.attributes['mcp.task.attempt']) - Number(b.attributes['mcp.task.attempt']));
    expect(runs.map((run) => run.attributes['mcp.task.attempt'])).to.deep.equal([1, 2]);
    for (const run of runs) expect(run.parentSpanId).to.equal(api.spanId);
    expect(runs[0]?.attributes).to.have.property('mcp.task.stopped');
    expect(runs[1]?.attributes).to.include({ 'mcp.task.status': 'completed' });
    const settles = spans.filter((span) => span.name.startsWith('settle '));
    expect(settles.map((span) => span.name)).to.deep.equal(['settle completed']);
    expect(settles[0]?.parentSpanId).to.equal(runs[1]?.spanId);
    expect(spans.filter((span) => span.name === 'queue wait')).to.have.length(1);
  });
  /** The spans of `traceId` once it holds two runs of the tool `wait` and the completed settle. */
  function twoRunsSettled(traceId: string): Promise<ReceivedSpan[]> {
    return eventually(() => {
      const found = receiver.spans.filter((span) => span.traceId === traceId);
      return found.filter((span) => span.name === 'execute_tool wait').length === 2 &&
        found.some((span) => span.name === 'settle completed')
        ? found
        : undefined;
    }, 30_000);
  }

  /**
   * A task whose attempt noted its start (tracing on: the record's `runs` field) on the system's one live worker,
   * which is then killed; `next` (a worker's settings) takes over.
   */
  async function killedMidAttempt(traceId: string, next: Record<string, string> = {}): Promise<string> {
    const doomed = system.workers.at(-1) as ChildHandle;
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${traceId}-${hex(8)}-01` };
    const taskId = String((await client.createTask('wait', { seconds: 2 }))['taskId']);
    const record = `${system.prefix}:task:${taskId}`;
    await eventually(async () => ((await system.redis.hexists(record, 'runs')) === 1 ? true : undefined));
    await doomed.stop('SIGKILL');
    await system.addWorker(next);
    return taskId;
  }

  it("an attempt lost to a SIGKILL is in the task's trace: the next attempt records it from its start, failed", async () => {
    const traceId = hex(16);
    const taskId = await killedMidAttempt(traceId);
    const spans = await twoRunsSettled(traceId);
    const api = spans.find((span) => span.name === 'tools/call wait') as ReceivedSpan;
    const [lost, next] = spans
      .filter((span) => span.name === 'execute_tool wait')
      .sort((a, b) => Number(a.attributes['mcp.task.attempt']) - Number(b.attributes['mcp.task.attempt']));
    expect(lost?.attributes).to.include({
      'mcp.task.id': taskId,
      'mcp.task.attempt': 1,
      'mcp.task.attempt.lost': true,
      'mcp.task.attempt.noticed_by': 'attempt 2',
    });
    expect(lost?.status.code, 'an error status').to.equal(2);
    expect(lost?.status.message).to.match(/stopped without ending it/);
    expect(lost?.attributes['mcp.worker.name']).to.be.a('string').and.not.equal(next?.attributes['mcp.worker.name']);
    expect(lost?.parentSpanId).to.equal(api.spanId);
    expect((lost?.startNs ?? 0n) < (next?.startNs ?? 0n)).to.equal(true);
    expect(next?.attributes).to.include({ 'mcp.task.attempt': 2, 'mcp.task.status': 'completed' });
    // Ended attempts leave no note behind.
    const record = `${system.prefix}:task:${taskId}`;
    await eventually(async () => ((await system.redis.hexists(record, 'runs')) === 0 ? true : undefined));
  });

  it('an attempt lost to a SIGKILL that no attempt follows (BullMQ gave the stalled job up) is recorded by the reconciler', async () => {
    const traceId = hex(16);
    // No second attempt: a stalled job fails at once, and the reconciler settles its task soon after.
    const givesUp = { WORKER_MAX_STALLED_COUNT: '0', MAINTENANCE_INTERVAL_MS: '200', RECONCILE_AFTER_MS: '500' };
    const taskId = await killedMidAttempt(traceId, givesUp);
    const lost = await eventually(
      () => receiver.spans.find((span) => span.traceId === traceId && span.name === 'execute_tool wait'),
      30_000,
    );
    expect(lost.attributes).to.include({
      'mcp.task.id': taskId,
      'mcp.task.attempt': 1,
      'mcp.task.attempt.lost': true,
      'mcp.task.attempt.noticed_by': 'reconciler',
    });
    expect(lost.status.code).to.equal(2);
    const store = new TaskStore(system.redis, new KeySpace(system.prefix));
    expect((await store.get(taskId))?.status).to.equal('failed');
  });
});

describe('tracing off: nothing carried, nothing sent', function () {
  this.timeout(60_000);
  let system: System;
  let receiver: OtlpReceiver;

  before(async () => {
    receiver = await startOtlpReceiver();
    system = await startSystem();
  });
  after(async () => {
    await system?.stop();
    await receiver?.close();
  });

  it('without OTEL_EXPORTER_OTLP_ENDPOINT the job data and the record have no trace field, whatever the client sent', async () => {
    const client = await McpTestClient.connect(system.apiUrl, '2025-11-25');
    client.headers = { traceparent: `00-${hex(16)}-${hex(8)}-01` };
    const task = await client.createTask('wait', { seconds: 30 });
    const redis = new Redis(system.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('tool-wait', { connection: redis, prefix: system.prefix });
    try {
      const job = await eventually(() => queue.getJob(String(task['taskId'])));
      expect(job.data).to.include.keys('taskId', 'tool', 'arguments');
      expect(job.data).to.not.have.property('trace');
      // Nor does the record keep a trace context or note its attempts.
      await eventually(async () => ((await job.getState()) === 'active' ? true : undefined));
      const record = `${system.prefix}:task:${String(task['taskId'])}`;
      expect(await redis.hmget(record, 'status', 'trace', 'runs')).to.deep.equal(['working', null, null]);
    } finally {
      await client.call('tasks/cancel', { taskId: task['taskId'] });
      await queue.close();
      redis.disconnect();
    }
    expect(receiver.spans).to.have.length(0);
  });
});
