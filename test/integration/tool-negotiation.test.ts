// Tool-level task negotiation on the server side (T-TOOL-1..6, T-CAP-2, T-CAP-3): which tools may or must be
// called as tasks, what older sessions get, and how a plain call runs on a worker through a hidden record.
import { expect } from 'chai';
import { toolRegistry } from '@mcp-tasks/tools';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

describe('tool task negotiation (api + worker in process, real Redis)', function () {
  this.timeout(20_000);
  let system: System;
  let client: McpTestClient;

  before(async function () {
    // Starting processes on a loaded machine can take longer than a test may; startSystem has its own 60 s bound.
    this.timeout(90_000);
    system = await startSystem();
    client = await McpTestClient.connect(system.apiUrl);
  });
  after(async () => {
    await system?.stop();
  });

  /** Task records of plain calls (kind 'call') in Redis right now; they never appear on the wire. */
  async function hiddenCalls(): Promise<Record<string, string>[]> {
    const keys = await system.redis.keys(`${system.prefix}:task:*`);
    const records = await Promise.all(keys.map((key) => system.redis.hgetall(key)));
    return records.filter((record) => record['kind'] === 'call');
  }

  function workerRecords(): Record<string, unknown>[] {
    return system.workers.flatMap((worker) => worker.records());
  }

  async function listedIds(session: McpTestClient): Promise<string[]> {
    return ((await session.call('tasks/list'))['tasks'] as { taskId: string }[]).map((task) => task.taskId);
  }

  /** Every trace of a task in Redis: its record, its job, and its entries in the live and expiry indexes. */
  async function tracesOf(taskId: string): Promise<string[]> {
    const { prefix, redis } = system;
    const [record, job, live, expiries] = await Promise.all([
      redis.exists(`${prefix}:task:${taskId}`),
      redis.exists(`${prefix}:tool-wait:${taskId}`),
      redis.zscore(`${prefix}:live`, taskId),
      redis.zrangebyscore(`${prefix}:expiries`, '-inf', '+inf'),
    ]);
    const traces = {
      record: record === 1,
      job: job === 1,
      live: live !== null,
      expiries: expiries.some((member) => member.includes(taskId)),
    };
    return Object.entries(traces)
      .filter(([, present]) => present)
      .map(([name]) => name);
  }

  describe('execution.taskSupport on a 2025-11-25 session', () => {
    it("T-TOOL-2: a task call of 'echo' (forbidden) is -32601 saying how to call it, and creates nothing", async () => {
      const caller = await McpTestClient.connect(system.apiUrl);
      const error = await expectRpcError(
        caller.call('tools/call', { name: 'echo', arguments: { text: 'hi' }, task: { ttl: 60_000 } }),
        -32601,
        /Tool 'echo' cannot be called as a task \(execution\.taskSupport is 'forbidden'\); call it without params\.task/,
      );
      expect(error.data).to.equal(undefined);
      expect(await listedIds(caller)).to.deep.equal([]);
      expect(await hiddenCalls()).to.deep.equal([]);
      // The plain call is the way to use it.
      expect(await caller.call('tools/call', { name: 'echo', arguments: { text: 'hi' } })).to.deep.equal({
        content: [{ type: 'text', text: 'hi' }],
      });
    });

    it("T-TOOL-4: a plain call of 'count_primes' (required) is -32601 saying to add params.task; as a task it runs", async () => {
      await expectRpcError(
        client.call('tools/call', { name: 'count_primes', arguments: { below: 1000 } }),
        -32601,
        /Tool 'count_primes' must be called as a task \(execution\.taskSupport is 'required'\); add params\.task/,
      );
      expect(await hiddenCalls()).to.deep.equal([]);
      const task = await client.createTask('count_primes', { below: 1000 });
      const result = await client.call('tasks/result', { taskId: task['taskId'] });
      expect(result['structuredContent']).to.deep.equal({ below: 1000, count: 168 });
    });

    it('T-TOOL-2, T-TOOL-4: negotiation comes before argument validation, so the -32601 is not hidden by a -32602', async () => {
      await expectRpcError(client.call('tools/call', { name: 'echo', arguments: {}, task: {} }), -32601, /forbidden/);
      await expectRpcError(
        client.call('tools/call', { name: 'count_primes', arguments: { below: 'x' } }),
        -32601,
        /required/,
      );
    });

    it("T-TOOL-3: 'wait' (optional) called as a task answers CreateTaskResult at once", async () => {
      // Ten minutes, beyond the test's timeout: only an answer that did not wait for the tool lets it pass.
      const result = await client.call('tools/call', { name: 'wait', arguments: { seconds: 600 }, task: {} });
      expect(result).to.not.have.property('content');
      const task = result['task'] as { taskId: string; status: string };
      expect(task.status).to.equal('working');
      expect(await listedIds(client)).to.include(task.taskId);
      await client.call('tasks/cancel', { taskId: task.taskId });
    });

    it("T-TOOL-3, T-TOOL-6: 'wait' called plainly runs on a worker and answers its CallToolResult; the hidden record is then gone", async () => {
      const seen = workerRecords().length;
      const before = await listedIds(client);
      const started = Date.now();
      const result = await client.call('tools/call', { name: 'wait', arguments: { seconds: 0.3 } });
      expect(Date.now() - started).to.be.at.least(250);
      // Exactly the tool's result: no task, no related-task _meta.
      expect(result).to.deep.equal({ content: [{ type: 'text', text: 'Waited 0.3s' }] });
      const settled = await eventually(() =>
        workerRecords()
          .slice(seen)
          .find((line) => line['message'] === 'task settled' && line['tool'] === 'wait'),
      );
      expect(settled['status']).to.equal('completed');
      const hiddenId = String(settled['taskId']);
      expect(await tracesOf(hiddenId)).to.deep.equal([]);
      expect(await listedIds(client)).to.deep.equal(before);
      await expectRpcError(client.call('tasks/get', { taskId: hiddenId }), -32602, /Task not found/);
    });

    it('T-TOOL-6: we choose to accept plain calls of optional tools: no -32600 "Task augmentation required"', async () => {
      const failing = await client.rpc('tools/call', { name: 'wait', arguments: { seconds: 0, fail: true } });
      expect(failing.result).to.deep.equal({
        content: [{ type: 'text', text: 'Failed on purpose after 0s' }],
        isError: true,
      });
      const crash = await client.rpc('tools/call', { name: 'crash', arguments: { message: 'plain' } });
      // The tool's own error, exactly as tasks/result would give it: never the -32600 of T-TOOL-6.
      expect(crash.error).to.deep.equal({
        code: -32603,
        message: "Tool 'crash' failed: plain",
        data: { tool: 'crash' },
      });
    });

    it("a plain call's hidden record is unreachable: tasks/get, tasks/result, tasks/cancel say not found and tasks/list omits it", async () => {
      const pending = client.call('tools/call', { name: 'wait', arguments: { seconds: 1 } });
      const [hidden] = await eventually(async () => {
        const calls = await hiddenCalls();
        return calls.length > 0 ? calls : undefined;
      });
      const taskId = String(hidden?.['taskId']);
      expect(hidden?.['owner']).to.equal(`session:${String(client.sessionId)}`);
      for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
        await expectRpcError(
          client.call(method, { taskId }),
          -32602,
          /^-32602: Failed to retrieve task: Task not found$/,
        );
      }
      expect(await listedIds(client)).to.not.include(taskId);
      // Neither lookups nor the failed cancel disturbed the call.
      expect(await pending).to.deep.equal({ content: [{ type: 'text', text: 'Waited 1s' }] });
      expect(await tracesOf(taskId)).to.deep.equal([]);
    });

    it('a streamed plain call survives its client disconnecting, and notifications/cancelled stops it', async () => {
      const pending = client.rpc('tools/call', { name: 'wait', arguments: { seconds: 30 } }, { id: 'call-to-cancel' });
      const running = await eventually(async () =>
        (await hiddenCalls()).find(
          (record) => record['tool'] === 'wait' && String(record['statusMessage']).startsWith('Running'),
        ),
      );
      const taskId = String(running['taskId']);
      const notified = await client.post({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'call-to-cancel', reason: 'user pressed stop' },
      });
      expect(notified.status).to.equal(202);
      const reply = await pending;
      expect(reply.error?.code).to.equal(-32800);
      expect(reply.error?.message).to.contain('user pressed stop');
      await eventually(
        () => workerRecords().find((line) => line['taskId'] === taskId && line['message'] === 'tool stopped'),
        5000,
      );
    });

    it('a plain call answered as JSON whose HTTP request the client aborts has its work stopped and leaves no record behind', async () => {
      const controller = new AbortController();
      // Without SSE the answer cannot be resumed, so a closed request means nobody waits for the work any more.
      const pending = client.call(
        'tools/call',
        { name: 'wait', arguments: { seconds: 30 } },
        { signal: controller.signal, headers: { accept: 'application/json' } },
      );
      pending.catch(() => undefined);
      const running = await eventually(async () =>
        (await hiddenCalls()).find(
          (record) => record['tool'] === 'wait' && String(record['statusMessage']).startsWith('Running'),
        ),
      );
      const taskId = String(running['taskId']);
      controller.abort();
      const error: unknown = await pending.then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect((error as Error | undefined)?.name).to.equal('AbortError');
      const stopped = await eventually(
        () => workerRecords().find((line) => line['taskId'] === taskId && line['message'] === 'tool stopped'),
        5000,
      );
      expect(stopped['tool']).to.equal('wait');
      expect(await eventually(async () => ((await tracesOf(taskId)).length === 0 ? true : undefined), 5000)).to.equal(
        true,
      );
      expect(workerRecords().some((line) => line['taskId'] === taskId && line['message'] === 'task settled')).to.equal(
        false,
      );
      const api = system.apis[0];
      expect(api?.records().filter((line) => line['level'] === 'error')).to.deep.equal([]);
    });
  });

  describe("a session's plain calls by request id (session:<id>:calls, for notifications/cancelled)", () => {
    function callsKeyOf(session: McpTestClient): string {
      return `${system.prefix}:session:${String(session.sessionId)}:calls`;
    }

    /** The caller's plain call of `tool` once its worker runs it. */
    function runningCallOf(session: McpTestClient, tool: string): Promise<Record<string, string>> {
      return eventually(async () =>
        (await hiddenCalls()).find(
          (record) =>
            record['sessionId'] === session.sessionId &&
            record['tool'] === tool &&
            String(record['statusMessage']).startsWith('Running'),
        ),
      );
    }

    it('T-RSRC-1: a call leaves the hash when it ends: answered as JSON or streamed, failed, abandoned or cancelled', async () => {
      const caller = await McpTestClient.connect(system.apiUrl);
      const calls = callsKeyOf(caller);
      // Answered as JSON, and on an SSE stream (it runs past RESULT_STREAM_AFTER_MS).
      expect(await caller.call('tools/call', { name: 'echo', arguments: { text: 'a' } })).to.deep.equal({
        content: [{ type: 'text', text: 'a' }],
      });
      const streamed = await caller.post({
        jsonrpc: '2.0',
        id: 'streamed',
        method: 'tools/call',
        params: { name: 'wait', arguments: { seconds: 0.6 } },
      });
      expect(streamed.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect((streamed.json as { result?: unknown }).result).to.deep.equal({
        content: [{ type: 'text', text: 'Waited 0.6s' }],
      });
      // Failed: an isError result, and a tool that threw.
      expect(
        (await caller.rpc('tools/call', { name: 'wait', arguments: { seconds: 0, fail: true } })).result,
      ).to.have.property('isError', true);
      expect((await caller.rpc('tools/call', { name: 'crash', arguments: { message: 'x' } })).error?.code).to.equal(
        -32603,
      );
      // Abandoned: the client closes a JSON request.
      const controller = new AbortController();
      const abandoned = caller.call(
        'tools/call',
        { name: 'wait', arguments: { seconds: 30 } },
        { signal: controller.signal, headers: { accept: 'application/json' } },
      );
      abandoned.catch(() => undefined);
      const running = await runningCallOf(caller, 'wait');
      controller.abort();
      await eventually(async () => ((await tracesOf(String(running['taskId']))).length === 0 ? true : undefined));
      // Cancelled by notifications/cancelled.
      const cancelled = caller.rpc('tools/call', { name: 'wait', arguments: { seconds: 30 } }, { id: 'to-cancel' });
      await runningCallOf(caller, 'wait');
      await caller.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'to-cancel' } });
      expect((await cancelled).error?.code).to.equal(-32800);

      await eventually(async () => ((await system.redis.exists(calls)) === 0 ? true : undefined), 5000);
      expect(await system.redis.hgetall(calls)).to.deep.equal({});
    });

    it("T-RSRC-1: the hash lives as long as its longest call: a shorter call's ttl does not cut a running call's entry", async () => {
      // On a 2025-06-18 session the task field's ttl is the plain call's own (the call stays plain: T-TOOL-5).
      const old = await McpTestClient.connect(system.apiUrl, '2025-06-18');
      const calls = callsKeyOf(old);
      const long = old.rpc(
        'tools/call',
        { name: 'wait', arguments: { seconds: 30 }, task: { ttl: 120_000 } },
        { id: 'long' },
      );
      await runningCallOf(old, 'wait');
      expect(await system.redis.pttl(calls)).to.be.within(60_000, 120_000);
      expect(
        await old.call('tools/call', { name: 'echo', arguments: { text: 'short' }, task: { ttl: 2000 } }),
      ).to.deep.equal({
        content: [{ type: 'text', text: 'short' }],
      });
      expect(await system.redis.pttl(calls)).to.be.within(60_000, 120_000);
      expect(await system.redis.hkeys(calls)).to.deep.equal(['"long"']);
      await old.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long' } });
      expect((await long).error?.code).to.equal(-32800);
      expect(await system.redis.exists(calls)).to.equal(0);
    });
  });

  describe('requests that are not task-augmentable (T-CAP-2) and older sessions (T-TOOL-5)', () => {
    it('T-CAP-2, T-TOOL-5: tools/list, ping and tasks/get with a task field are processed normally, the field ignored', async () => {
      const { tools } = (await client.call('tools/list', { task: { ttl: 60_000 } })) as { tools: unknown[] };
      expect(tools).to.have.length(toolRegistry.list().length);
      expect(await client.call('ping', { task: {} })).to.deep.equal({});
      const created = await client.createTask('wait', { seconds: 0 });
      const task = await client.call('tasks/get', { taskId: created['taskId'], task: { ttl: 1000 } });
      expect(task['taskId']).to.equal(created['taskId']);
      expect(task).to.not.have.property('task');
    });

    it("T-TOOL-5: a 2025-06-18 session calling 'wait' with a task field gets a normal CallToolResult and no task", async () => {
      const old = await McpTestClient.connect(system.apiUrl, '2025-06-18');
      expect(old.protocolVersion).to.equal('2025-06-18');
      const started = Date.now();
      const result = await old.call('tools/call', { name: 'wait', arguments: { seconds: 0.3 }, task: { ttl: 60_000 } });
      expect(Date.now() - started).to.be.at.least(250);
      expect(result).to.deep.equal({ content: [{ type: 'text', text: 'Waited 0.3s' }] });
      expect(await system.redis.exists(`${system.prefix}:owner:session:${String(old.sessionId)}`)).to.equal(0);
      expect(await listedIds(old)).to.deep.equal([]);
    });

    it("T-TOOL-5: on a 2025-06-18 session 'echo' (forbidden) with a task field is just called", async () => {
      const old = await McpTestClient.connect(system.apiUrl, '2025-06-18');
      expect(await old.call('tools/call', { name: 'echo', arguments: { text: 'old' }, task: {} })).to.deep.equal({
        content: [{ type: 'text', text: 'old' }],
      });
    });

    it("T-TOOL-5: on a 2025-06-18 session 'count_primes' (required) is a plain call, which task handles let run (listed optional there)", async () => {
      // A revision without Tasks gets task handles (docs/clients.md; task-handles.test.ts): the tool is listed optional
      // to it and its plain call runs. With TASK_HANDLES=off it is -32601 (task-handles.test.ts).
      const old = await McpTestClient.connect(system.apiUrl, '2025-06-18');
      const { tools } = (await old.call('tools/list')) as { tools: { name: string; execution?: unknown }[] };
      expect(tools.find((tool) => tool.name === 'count_primes')?.execution).to.deep.equal({ taskSupport: 'optional' });
      expect(
        await old.call('tools/call', { name: 'count_primes', arguments: { below: 10 }, task: {} }),
      ).to.deep.include({ structuredContent: { below: 10, count: 4 } });
    });

    it("T-TOOL-1, T-CAP-3: what counts is the server's declaration for the session, not the client's capabilities", async () => {
      // A 2025-11-25 client that declared no tasks capability of its own still sees ours and may task-augment tools/call.
      const bare = new McpTestClient(system.apiUrl);
      const init = await bare.initialize('2025-11-25', {});
      expect((init['capabilities'] as { tasks?: { requests?: unknown } }).tasks?.requests).to.deep.equal({
        tools: { call: {} },
      });
      const task = await bare.createTask('wait', { seconds: 0 });
      expect(task['status']).to.equal('working');
      expect((await bare.call('tasks/result', { taskId: task['taskId'] }))['content']).to.deep.equal([
        { type: 'text', text: 'Waited 0s' },
      ]);
    });
  });
});
