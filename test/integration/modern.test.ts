// The 2026-07-28 wire beside 2025-11-25 on one endpoint (spec/REQUIREMENTS-2026-07-28.md): classification of each
// POST, the stateless core, the tasks extension from the same engine, MRTR, subscriptions/listen, on two api
// replicas sharing one Redis and one worker (the conformance fixture tools, scripts/conformance/tools.ts).
import { expect } from 'chai';
import { KeySpace, TaskKeys, TaskStore } from '@mcp-tasks/engine';
import { eventually, McpTestClient, sleep } from '../support/mcp-client.ts';
import {
  MODERN,
  modernPost,
  modernRequest,
  modernResult,
  openStream,
  TASKS_EXT,
  WITH_TASKS,
  type ModernReply,
  pollModernTask,
} from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const FIXTURES = { MCPT_TOOLS: './scripts/conformance/tools.ts' };

function expectError(reply: ModernReply, status: number, code: number): void {
  expect(reply.status, JSON.stringify(reply.body)).to.equal(status);
  expect(reply.body.error?.code, JSON.stringify(reply.body)).to.equal(code);
}

describe('C26-COEX-1: MCP 2026-07-28 beside 2025-11-25 on one endpoint (two api replicas, a worker, real Redis)', function () {
  this.timeout(60_000);
  let system: System;
  let a: string;
  let b: string;

  before(async () => {
    system = await startSystem({ apis: 2, env: FIXTURES });
    a = system.apis[0]?.url as string;
    b = system.apis[1]?.url as string;
  });
  after(async () => {
    await system?.stop();
  });

  const poll = (url: string, taskId: string, done: (task: Record<string, unknown>) => boolean) =>
    pollModernTask(url, taskId, done);

  describe('classification of each POST (C26-COEX-2)', () => {
    it('C26-COEX-4, C26-COEX-7, X-NEG-9, C26-SES-4: a legacy initialize still gets 2025-11-25 with the core tasks capability and a session, which DELETE ends', async () => {
      const client = await McpTestClient.connect(a);
      expect(client.protocolVersion).to.equal('2025-11-25');
      expect(client.sessionId).to.be.a('string');
      expect((await client.call('tools/list'))['tools']).to.be.an('array');
      await client.terminate();
      const after = await client.post({ jsonrpc: '2.0', id: 99, method: 'tools/list' });
      expect(after.status).to.equal(404);
    });

    it('X-NEG-7: on a legacy session the extension capability enables no task: a call is answered with its result', async () => {
      const client = new McpTestClient(a);
      await client.initialize('2025-11-25', { extensions: { [TASKS_EXT]: {} } });
      const result = await client.call('tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
      expect(result).not.to.have.any.keys('task', 'taskId', 'resultType');
      expect(result['content']).to.have.length(1);
    });

    it('C26-LEG-5: the legacy version check sits behind the classifier: an unknown header on a session is 400, 2026-07-28 with a claim is served', async () => {
      const client = await McpTestClient.connect(a);
      const legacy = await client.post(
        { jsonrpc: '2.0', id: 7, method: 'tools/list' },
        { 'mcp-protocol-version': 'v999' },
      );
      expect(legacy.status).to.equal(400);
      expect((legacy.json as { error?: { code: number } }).error?.code).to.equal(-32600);
      expect(await modernResult(a, 'tools/list')).to.include({ resultType: 'complete' });
    });

    it('C26-COEX-5: server/discover without a claim is legacy traffic and gets a 4xx JSON-RPC error, never a 5xx', async () => {
      for (const headers of [{}, { 'mcp-protocol-version': '2025-11-25' }] as Record<string, string>[]) {
        const res = await fetch(a, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} }),
        });
        expect(res.status).to.be.within(400, 499);
        expect((JSON.parse(await res.text()) as { error?: { code: number } }).error?.code).to.be.a('number');
      }
    });

    it('C26-SSE-3, C26-COEX-3: a Last-Event-ID on a modern request is ignored: it is served, not resumed', async () => {
      const reply = await modernPost(a, 'tools/list', {}, { headers: { 'last-event-id': 's.1-0' } });
      expect(reply.status).to.equal(200);
      expect(reply.body.result).to.include({ resultType: 'complete' });
    });

    it('C26-COEX-4: a legacy initialize asking for 2026-07-28 is answered with 2025-11-25, no extensions', async () => {
      const res = await fetch(a, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
      const text = await res.text();
      const body = JSON.parse(text.startsWith('event:') ? (text.split('data: ')[1] ?? '{}') : text) as {
        result: { protocolVersion: string; capabilities: Record<string, unknown> };
      };
      expect(body.result.protocolVersion).to.equal('2025-11-25');
      expect(body.result.capabilities).to.have.property('tasks');
      expect(body.result.capabilities).not.to.have.property('extensions');
    });

    it('C26-COEX-3: initialize with a valid modern claim is 404 -32601', async () => {
      expectError(
        await modernPost(a, 'initialize', {
          protocolVersion: MODERN,
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        }),
        404,
        -32601,
      );
    });

    it('C26-COEX-2 row 5: initialize without a claim but with a modern MCP-Protocol-Version header is 400 -32020', async () => {
      const reply = await modernPost(
        a,
        'initialize',
        { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        { meta: {} },
      );
      expectError(reply, 400, -32020);
    });

    it('C26-COEX-2 row 7, C26-META-1: no claim with a 2026-07-28 header is 400 -32602 naming the _meta keys', async () => {
      const reply = await modernPost(a, 'tools/list', {}, { meta: {} });
      expectError(reply, 400, -32602);
      expect(reply.body.error?.message).to.match(/protocolVersion/);
    });

    it('C26-META-1: a claim without clientCapabilities is 400 -32602 with the request id echoed (C26-ERR-1)', async () => {
      const reply = await modernPost(
        a,
        'tools/list',
        {},
        { id: 'x-1', meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } },
      );
      expectError(reply, 400, -32602);
      expect(reply.body.id).to.equal('x-1');
    });

    it('C26-LEG-3: a request without claim and without session stays on the legacy path (400 asking for initialize)', async () => {
      const res = await fetch(a, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).to.equal(400);
      expect(await res.text()).to.match(/Mcp-Session-Id header is required/);
    });

    it('C26-HDR-5: a notification with a claim is accepted with 202 and no body', async () => {
      const { headers, body } = modernRequest('notifications/cancelled', { requestId: 'r-1' });
      const parsed = JSON.parse(body) as Record<string, unknown>;
      delete parsed['id'];
      const res = await fetch(a, { method: 'POST', headers, body: JSON.stringify(parsed) });
      expect(res.status).to.equal(202);
      expect(await res.text()).to.equal('');
    });

    it('C26-SES-1, C26-COEX-3: modern requests mint no session and ignore an Mcp-Session-Id', async () => {
      const reply = await modernPost(a, 'tools/list', {}, { headers: { 'mcp-session-id': 'made-up' } });
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('mcp-session-id')).to.equal(null);
    });
  });

  describe('the stateless core', () => {
    it('C26-VER-1, C26-VER-4, C26-VER-6, X-CAP-1, X-CAP-2: server/discover', async () => {
      const result = await modernResult(a, 'server/discover');
      expect(result['resultType']).to.equal('complete');
      expect(result['supportedVersions']).to.deep.equal([MODERN]);
      expect(result['ttlMs']).to.be.a('number');
      expect(result['cacheScope']).to.equal('public');
      const capabilities = result['capabilities'] as Record<string, Record<string, unknown>>;
      expect(capabilities['extensions']?.[TASKS_EXT]).to.deep.equal({});
      expect(capabilities).not.to.have.property('tasks');
      expect(result['_meta']).to.have.property('io.modelcontextprotocol/serverInfo');
    });

    it('C26-VER-5: an envelope that claims 2025-11-25 is 400 -32022, not a legacy request', async () => {
      const reply = await modernPost(
        a,
        'tools/list',
        {},
        {
          meta: {
            'io.modelcontextprotocol/protocolVersion': '2025-11-25',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
          headers: { 'mcp-protocol-version': '2025-11-25' },
        },
      );
      expectError(reply, 400, -32022);
      expect(reply.body.error?.data).to.deep.equal({ supported: [MODERN], requested: '2025-11-25' });
    });

    it('C26-VER-7: what discover declares has handlers: tools, prompts and resources answer their lists', async () => {
      const capabilities = (await modernResult(a, 'server/discover'))['capabilities'] as Record<string, unknown>;
      expect(capabilities).to.include.keys('tools', 'prompts', 'resources');
      expect(capabilities['tools']).to.deep.equal({ listChanged: true });
      for (const [method, field] of [
        ['tools/list', 'tools'],
        ['prompts/list', 'prompts'],
        ['resources/list', 'resources'],
        ['resources/templates/list', 'resourceTemplates'],
      ] as const) {
        expect(await modernResult(a, method), method)
          .to.have.property(field)
          .that.is.an('array');
      }
    });

    it('C26-META-2: a request without clientInfo is served', async () => {
      const meta = {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      const result = await modernResult(a, 'tools/call', { name: 'greet', arguments: { name: 'anon' } }, { meta });
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'Hello, anon!' }]);
    });

    it('C26-META-3, C26-SES-2, X-NEG-2: capabilities count for their own request only, whatever came before', async () => {
      const call = { name: 'slow_compute', arguments: { seconds: 1, label: 'meta-3' } };
      expect(await modernResult(a, 'tools/call', call, { capabilities: WITH_TASKS })).to.include({
        resultType: 'task',
      });
      // The same caller, next request, without the extension: answered synchronously, and a task-only tool refused.
      expect(await modernResult(a, 'tools/call', call)).to.include({ resultType: 'complete' });
      expectError(await modernPost(a, 'tools/call', { name: 'failing_job', arguments: {} }), 400, -32021);
      expect(await modernResult(a, 'tools/call', call, { capabilities: WITH_TASKS })).to.include({
        resultType: 'task',
      });
    });

    it('C26-META-5: results carry the serverInfo _meta', async () => {
      for (const [method, params] of [
        ['server/discover', {}],
        ['tools/list', {}],
        ['prompts/list', {}],
        ['tools/call', { name: 'greet', arguments: { name: 'x' } }],
      ] as const) {
        const result = await modernResult(a, method, params);
        expect(result['_meta'], method)
          .to.have.property('io.modelcontextprotocol/serverInfo')
          .that.includes.keys('name', 'version');
      }
    });

    it('C26-MTH-2: tools/list is the same on both replicas whatever the capabilities, in the same order', async () => {
      const plain = (await modernResult(a, 'tools/list'))['tools'];
      const other = (await modernResult(b, 'tools/list', {}, { capabilities: { ...WITH_TASKS, elicitation: {} } }))[
        'tools'
      ];
      expect(other).to.deep.equal(plain);
      expect((await modernResult(a, 'tools/list'))['tools']).to.deep.equal(plain);
    });

    it('C26-RES-3: a tool error is a CallToolResult with isError, not a JSON-RPC error', async () => {
      const reply = await modernPost(a, 'tools/call', { name: 'test_error_handling', arguments: {} });
      expect(reply.body).not.to.have.property('error');
      expect(reply.body.result).to.include({ resultType: 'complete', isError: true });
      expect(reply.body.result?.['content']).to.have.length(1);
    });

    it('C26-LOG-1: a call whose _meta has no logLevel gets no notifications/message, though its tool logs', async () => {
      const reply = await modernPost(a, 'tools/call', { name: 'test_logging_tool', arguments: {} });
      expect(reply.messages.filter((message) => message['method'] === 'notifications/message')).to.deep.equal([]);
      expect(reply.body.result?.['content']).to.deep.equal([{ type: 'text', text: 'Logging tool completed' }]);
    });

    it('C26-MRTR-1, X-NEG-6, X-NEG-4, C26-ERR-2: only tools/call answers input_required or a task; a missing prompt or resource is -32602', async () => {
      const capabilities = { ...WITH_TASKS, elicitation: {}, sampling: {}, roots: {} };
      for (const method of ['server/discover', 'tools/list', 'prompts/list', 'resources/list']) {
        expect((await modernResult(a, method, {}, { capabilities }))['resultType'], method).to.equal('complete');
      }
      for (const [method, params] of [
        ['prompts/get', { name: 'test_input_required_result_prompt' }],
        ['resources/read', { uri: 'test://static-text' }],
      ] as const) {
        const reply = await modernPost(a, method, params, {
          capabilities,
          headers: { 'mcp-name': 'name' in params ? params.name : params.uri },
        });
        expect(reply.body.error?.code, method).to.equal(-32602);
      }
    });

    it('C26-SSE-4: closing the answer of a synchronous call cancels that call', async () => {
      const store = new TaskStore(system.redis, new KeySpace(system.prefix));
      const taskKeys = new TaskKeys(new KeySpace(system.prefix));
      // The call's hidden record is the one task of this tool and label (records are named by TaskKeys only).
      const recordPattern = taskKeys.record('*');
      const taskIds = async () =>
        (await system.redis.keys(recordPattern))
          .map((key) => key.slice(recordPattern.length - 1))
          .filter((id) => !id.includes(':'));
      const before = new Set(await taskIds());
      const controller = new AbortController();
      const { headers, body } = modernRequest('tools/call', {
        name: 'slow_compute',
        arguments: { seconds: 60, label: 'sse-4' },
      });
      const pending = fetch(a, { method: 'POST', headers, body, signal: controller.signal }).catch(() => undefined);
      const taskId = await eventually(async () => {
        for (const id of await taskIds()) {
          if (before.has(id)) continue;
          const record = await store.get(id);
          if (record?.tool === 'slow_compute' && record.status === 'working') return id;
        }
        return undefined;
      });
      controller.abort();
      await pending;
      // The call is cancelled and then forgotten: its record goes.
      await eventually(async () => {
        const record = await store.get(taskId);
        return record === undefined || record.status === 'cancelled' ? true : undefined;
      });
    });

    it('C26-VER-2, C26-VER-3: an unsupported version is 400 -32022 with supported and requested', async () => {
      const reply = await modernPost(
        a,
        'tools/list',
        {},
        {
          meta: {
            'io.modelcontextprotocol/protocolVersion': 'v999.0.0',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
          headers: { 'mcp-protocol-version': 'v999.0.0' },
        },
      );
      expectError(reply, 400, -32022);
      expect(reply.body.error?.data).to.deep.equal({ supported: [MODERN], requested: 'v999.0.0' });
    });

    it('C26-ERR-3: a 2026-07-28 header with a v999.0.0 envelope is -32020, not -32022', async () => {
      const reply = await modernPost(
        a,
        'tools/list',
        {},
        {
          meta: {
            'io.modelcontextprotocol/protocolVersion': 'v999.0.0',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      );
      expectError(reply, 400, -32020);
    });

    it('C26-HDR-1: Mcp-Method or Mcp-Name that do not match the body are 400 -32020', async () => {
      expectError(await modernPost(a, 'tools/list', {}, { headers: { 'mcp-method': 'tools/call' } }), 400, -32020);
      expectError(
        await modernPost(
          a,
          'tools/call',
          { name: 'greet', arguments: { name: 'x' } },
          { headers: { 'mcp-name': 'other' } },
        ),
        400,
        -32020,
      );
      expectError(
        await modernPost(a, 'tools/call', { name: 'greet', arguments: { name: 'x' } }, { headers: { 'mcp-name': '' } }),
        400,
        -32020,
      );
    });

    it('C26-HDR-2: a base64-encoded Mcp-Name is decoded before the comparison', async () => {
      const encoded = `=?base64?${Buffer.from('greet').toString('base64')}?=`;
      const result = await modernResult(
        a,
        'tools/call',
        { name: 'greet', arguments: { name: 'b64' } },
        { headers: { 'mcp-name': encoded } },
      );
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'Hello, b64!' }]);
    });

    it('C26-MTH-1, X-ERR-4, X-SEC-3, C26-HDR-3: removed methods, tasks/list among them, are 404 -32601 (no Mcp-Name needed)', async () => {
      for (const method of [
        'ping',
        'logging/setLevel',
        'resources/subscribe',
        'tasks/result',
        'tasks/list',
        'unknown/method',
      ]) {
        expectError(
          await modernPost(a, method, { taskId: 'x' }, { capabilities: WITH_TASKS, headers: { 'mcp-name': '' } }),
          404,
          -32601,
        );
      }
    });

    it('C26-MTH-3, X-NEG-11, C26-RES-2: tools/list has no execution field and carries cache hints', async () => {
      const result = await modernResult(a, 'tools/list');
      const tools = result['tools'] as Record<string, unknown>[];
      expect(tools.map((tool) => tool['name'])).to.include.members(['greet', 'slow_compute', 'failing_job']);
      for (const tool of tools) expect(tool).not.to.have.property('execution');
      expect(result).to.include({ resultType: 'complete', cacheScope: 'public' });
    });

    it('C26-RES-1, X-NEG-2, X-NEG-10: a call without the extension is answered synchronously, the legacy task param ignored', async () => {
      const result = await modernResult(a, 'tools/call', {
        name: 'slow_compute',
        arguments: { seconds: 0 },
        task: { ttl: 60_000 },
      });
      expect(result['resultType']).to.equal('complete');
      expect(result).not.to.have.property('taskId');
      expect(result['content']).to.have.length(1);
    });

    it('C26-META-4, X-NEG-5: a task-only tool called without the extension is 400 -32021 naming it', async () => {
      const reply = await modernPost(a, 'tools/call', { name: 'failing_job', arguments: {} });
      expectError(reply, 400, -32021);
      expect(reply.body.error?.data).to.deep.equal({ requiredCapabilities: { extensions: { [TASKS_EXT]: {} } } });
    });

    it('C26-META-4: a tool that needs sampling from a caller that did not declare it gets 400 -32021 {sampling}', async () => {
      const reply = await modernPost(a, 'tools/call', { name: 'test_missing_capability', arguments: {} });
      expectError(reply, 400, -32021);
      expect(reply.body.error?.data).to.deep.equal({ requiredCapabilities: { sampling: {} } });
    });

    it('C26-SSE-1, C26-SSE-5, C26-SSE-2: progress of a synchronous call travels on its unbuffered SSE answer before the result', async () => {
      const reply = await modernPost(
        a,
        'tools/call',
        { name: 'test_tool_with_progress', arguments: {} },
        {
          meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN,
            'io.modelcontextprotocol/clientCapabilities': {},
            progressToken: 'p-1',
          },
        },
      );
      const progress = reply.messages.filter((message) => message['method'] === 'notifications/progress');
      expect(progress.length).to.be.greaterThan(0);
      expect((progress[0]?.['params'] as Record<string, unknown>)['progressToken']).to.equal('p-1');
      expect(reply.body.result?.['resultType']).to.equal('complete');
      expect(reply.headers.get('x-accel-buffering')).to.equal('no');
    });
  });

  describe('the tasks extension from the same engine', () => {
    it('X-NEG-1, X-RES-1, X-RES-3, X-CRE-1, X-GET-1, X-GET-5, X-RES-2, X-GET-7, X-TTL-1, X-TTL-2, X-SEC-1, C26-SES-3: created on one replica, polled by its id on the other to completed', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 1, label: 'x' } },
        { capabilities: WITH_TASKS },
      );
      expect(created).to.include({ resultType: 'task', status: 'working' });
      expect(created).to.have.property('ttlMs').that.is.a('number');
      expect(created).not.to.have.any.keys('task', 'result', 'requestState', 'ttl', 'pollInterval');
      const ttlMs = created['ttlMs'] as number | null;
      if (ttlMs !== null) expect(Number.isInteger(ttlMs) && ttlMs > 0, `ttlMs ${ttlMs}`).to.equal(true);
      const pollIntervalMs = created['pollIntervalMs'];
      if (pollIntervalMs !== undefined)
        expect(Number.isInteger(pollIntervalMs) && Number(pollIntervalMs) > 0).to.equal(true);
      const taskId = created['taskId'] as string;
      // 122 random bits: a version-4 UUID.
      expect(taskId).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // Durable before the answer: the other replica resolves it at once.
      const first = await modernResult(b, 'tasks/get', { taskId }, { capabilities: WITH_TASKS });
      expect(first['resultType']).to.equal('complete');
      const done = await poll(b, taskId, (task) => task['status'] === 'completed');
      expect((done['result'] as Record<string, unknown>)['content']).to.deep.equal([
        { type: 'text', text: 'Computed x in 1s' },
      ]);
      expect(done['result']).not.to.have.nested.property('_meta.io\\.modelcontextprotocol/related-task');
      expect(done).not.to.have.any.keys('requestState', 'ttl', 'pollInterval');
      expect(done['resultType']).to.equal('complete');
      for (const field of ['createdAt', 'lastUpdatedAt']) {
        expect(done[field]).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
      }
      // Still there half a second after it ended (the conformance harness reads it again then).
      await sleep(500);
      expect(await modernResult(a, 'tasks/get', { taskId }, { capabilities: WITH_TASKS })).to.include({
        status: 'completed',
      });
    });

    it("X-GET-4: the legacy task.ttl asks for nothing: ttlMs is the server's, counted from createdAt", async () => {
      const call = { name: 'slow_compute', arguments: { seconds: 1, label: 'ttl' } };
      const plain = await modernResult(a, 'tools/call', call, { capabilities: WITH_TASKS });
      const asked = await modernResult(a, 'tools/call', { ...call, task: { ttl: 1234 } }, { capabilities: WITH_TASKS });
      expect(asked['ttlMs']).to.equal(plain['ttlMs']);
      expect(asked['ttlMs']).not.to.equal(1234);
      const read = await modernResult(b, 'tasks/get', { taskId: asked['taskId'] }, { capabilities: WITH_TASKS });
      expect(read['createdAt']).to.equal(asked['createdAt']);
      expect(read['ttlMs']).to.equal(asked['ttlMs']);
    });

    it('X-GET-2: polling a task ten times a second, as the conformance harness may, is not rate-limited', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 2, label: 'poll' } },
        { capabilities: WITH_TASKS },
      );
      for (let i = 0; i < 20; i++) {
        const reply = await modernPost(
          i % 2 ? a : b,
          'tasks/get',
          { taskId: created['taskId'] },
          { capabilities: WITH_TASKS },
        );
        expect(reply.body.error, JSON.stringify(reply.body)).to.equal(undefined);
        await sleep(100);
      }
    });

    it('X-NEG-8: a request that declares only the legacy tasks capability is treated as non-declaring', async () => {
      const capabilities = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
      const sync = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 0, label: 'legacy-cap' } },
        { capabilities },
      );
      expect(sync).to.include({ resultType: 'complete' });
      expectError(
        await modernPost(a, 'tools/call', { name: 'failing_job', arguments: {} }, { capabilities }),
        400,
        -32021,
      );
      expectError(await modernPost(a, 'tasks/get', { taskId: 'gate-test' }, { capabilities }), 400, -32021);
    });

    it('X-HTTP-1: tasks/get, tasks/update and tasks/cancel need an Mcp-Name equal to the taskId', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 1, label: 'http-1' } },
        { capabilities: WITH_TASKS },
      );
      const taskId = created['taskId'] as string;
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        const params = { taskId, inputResponses: {} };
        for (const name of ['other-task', '']) {
          expectError(
            await modernPost(b, method, params, { capabilities: WITH_TASKS, headers: { 'mcp-name': name } }),
            400,
            -32020,
          );
        }
      }
      expect(await modernResult(b, 'tasks/get', { taskId }, { capabilities: WITH_TASKS })).to.include({ taskId });
    });

    it('a task whose tool asks for input its creating request did not declare fails with -32021 naming the capability', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'confirm_delete', arguments: { filename: 'no-elicitation.txt' } },
        { capabilities: WITH_TASKS },
      );
      const failed = await poll(b, created['taskId'] as string, (task) => task['status'] === 'failed');
      expect(failed['error']).to.deep.include({
        code: -32021,
        data: { requiredCapabilities: { elicitation: {} } },
      });
    });

    it('X-CAN-1: notifications/cancelled naming the request that created a task does not cancel the task', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 1, label: 'can-1' } },
        { capabilities: WITH_TASKS, id: 'create-can-1' },
      );
      const { headers, body } = modernRequest(
        'notifications/cancelled',
        { requestId: 'create-can-1' },
        { capabilities: WITH_TASKS },
      );
      const notification = JSON.parse(body) as Record<string, unknown>;
      delete notification['id'];
      const res = await fetch(a, { method: 'POST', headers, body: JSON.stringify(notification) });
      expect(res.status).to.equal(202);
      const done = await poll(b, created['taskId'] as string, (task) => task['status'] !== 'working');
      expect(done['status']).to.equal('completed');
    });

    it('X-GET-5, X-GET-6, X-ERR-3: a tool error (isError) is a completed task with the result; a JSON-RPC error is failed with error', async () => {
      const failing = await modernResult(
        a,
        'tools/call',
        { name: 'failing_job', arguments: {} },
        { capabilities: WITH_TASKS },
      );
      const completed = await poll(a, failing['taskId'] as string, (task) => task['status'] === 'completed');
      expect((completed['result'] as Record<string, unknown>)['isError']).to.equal(true);
      const protocol = await modernResult(
        a,
        'tools/call',
        { name: 'protocol_error_job', arguments: {} },
        { capabilities: WITH_TASKS },
      );
      const failed = await poll(b, protocol['taskId'] as string, (task) => task['status'] === 'failed');
      expect(failed['error']).to.include({ code: -32603 });
      expect((failed['error'] as Record<string, unknown>)['message']).to.be.a('string').that.is.not.empty;
      expect(failed).to.have.property('statusMessage');
      expect(failed).not.to.have.property('result');
    });

    it('X-NTF-3: the progress of a task shows as its statusMessage, with no progress notification', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 3 } },
        {
          capabilities: WITH_TASKS,
        },
      );
      const task = await poll(b, created['taskId'] as string, (t) =>
        /Computed [12]s of 3s/.test(String(t['statusMessage'])),
      );
      expect(task['status']).to.equal('working');
    });

    it('X-UPD-4, X-UPD-5, X-UPD-6, X-UPD-8, X-RES-2: input requests answered with tasks/update on the other replica, one key at a time', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'multi_input', arguments: {} },
        { capabilities: { ...WITH_TASKS, elicitation: {} } },
      );
      const taskId = created['taskId'] as string;
      const waiting = await poll(
        b,
        taskId,
        (task) => Object.keys((task['inputRequests'] as object | undefined) ?? {}).length === 2,
      );
      expect(waiting['status']).to.equal('input_required');
      const [first, second] = Object.keys(waiting['inputRequests'] as object);
      const ack = await modernResult(
        b,
        'tasks/update',
        { taskId, inputResponses: { [first as string]: { action: 'accept', content: { name: 'n', confirm: true } } } },
        { capabilities: WITH_TASKS },
      );
      expect(ack).to.deep.equal({ resultType: 'complete', _meta: ack['_meta'] });
      // Read-your-writes: the next read no longer shows the answered key.
      const after = await modernResult(a, 'tasks/get', { taskId }, { capabilities: WITH_TASKS });
      expect(Object.keys((after['inputRequests'] as object | undefined) ?? {})).to.deep.equal([second]);
      // Unknown keys and malformed values are acknowledged and ignored (X-UPD-8).
      await modernResult(
        a,
        'tasks/update',
        { taskId, inputResponses: { 'unknown-key': { ignored: true } } },
        { capabilities: WITH_TASKS },
      );
      await modernResult(
        a,
        'tasks/update',
        {
          taskId,
          inputResponses: { [second as string]: { action: 'accept', content: { name: 'm', confirm: false } } },
        },
        { capabilities: WITH_TASKS },
      );
      await poll(b, taskId, (task) => task['status'] === 'completed');
    });

    it('X-CAN-2, X-CAN-3: tasks/cancel on the other replica answers the empty ack, also on a terminal task', async () => {
      const created = await modernResult(
        a,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 60 } },
        { capabilities: WITH_TASKS },
      );
      const taskId = created['taskId'] as string;
      const ack = await modernResult(b, 'tasks/cancel', { taskId }, { capabilities: WITH_TASKS });
      expect(Object.keys(ack).sort()).to.deep.equal(['_meta', 'resultType']);
      const cancelled = await poll(a, taskId, (task) => task['status'] === 'cancelled');
      expect(cancelled).not.to.have.any.keys('result', 'error');
      expect(await modernResult(b, 'tasks/cancel', { taskId }, { capabilities: WITH_TASKS })).to.include({
        resultType: 'complete',
      });
    });

    it('X-ERR-1, X-ERR-2, X-UPD-7, X-CAN-2: tasks/* without the extension is -32021 before the lookup; an unknown id is -32602', async () => {
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        expectError(await modernPost(a, method, { taskId: 'gate-test', inputResponses: {} }), 400, -32021);
        const unknown = await modernPost(
          a,
          method,
          { taskId: 'no-such-task', inputResponses: {} },
          { capabilities: WITH_TASKS },
        );
        expect(unknown.body.error?.code, method).to.equal(-32602);
      }
    });

    it('C26-LEG-4: a legacy task is not readable on the modern wire without its session (its owner is the session)', async () => {
      const client = await McpTestClient.connect(a);
      const task = await client.createTask('slow_compute', { seconds: 0 });
      const reply = await modernPost(
        b,
        'tasks/get',
        { taskId: task['taskId'] as string },
        { capabilities: WITH_TASKS },
      );
      expect(reply.body.error?.code).to.equal(-32602);
    });
  });

  describe('MRTR for synchronous calls (C26-MRTR-*)', () => {
    it('C26-MRTR-2, C26-MRTR-3, C26-MRTR-8: round 1 is input_required with the named request and a requestState; the retry on the other replica completes', async () => {
      const capabilities = { elicitation: {} };
      const round1 = await modernResult(
        a,
        'tools/call',
        { name: 'test_input_required_result_elicitation', arguments: {} },
        { capabilities },
      );
      expect(round1['resultType']).to.equal('input_required');
      expect(round1).not.to.have.any.keys('ttlMs', 'cacheScope', 'taskId');
      const request = (round1['inputRequests'] as Record<string, Record<string, unknown>>)['user_name'];
      expect(request?.['method']).to.equal('elicitation/create');
      // A form, correlated by requestState: none of the URL-elicitation artefacts 2026-07-28 removed.
      expect(request?.['params']).to.include({ mode: 'form' });
      expect(request?.['params']).not.to.have.property('elicitationId');
      const retry = await modernResult(
        b,
        'tools/call',
        {
          name: 'test_input_required_result_elicitation',
          arguments: {},
          inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
          requestState: round1['requestState'],
        },
        { capabilities },
      );
      expect(retry['content']).to.deep.equal([{ type: 'text', text: 'Hello, Alice!' }]);
    });

    it('C26-MRTR-6: a retry without the answer gets a new input_required for the same question', async () => {
      const capabilities = { elicitation: {} };
      const round1 = await modernResult(
        a,
        'tools/call',
        { name: 'test_input_required_result_elicitation', arguments: {} },
        { capabilities },
      );
      const again = await modernResult(
        b,
        'tools/call',
        {
          name: 'test_input_required_result_elicitation',
          arguments: {},
          inputResponses: { wrong: { action: 'accept', content: {} } },
          requestState: round1['requestState'],
        },
        { capabilities },
      );
      expect(again['resultType']).to.equal('input_required');
      expect(again['inputRequests']).to.have.property('user_name');
    });

    it('C26-MRTR-7: a tool may ask again over several rounds; no round and no result carries cache hints', async () => {
      const capabilities = { elicitation: {} };
      const call = { name: 'test_input_required_result_multi_round', arguments: {} };
      const round1 = await modernResult(a, 'tools/call', call, { capabilities });
      expect(round1['inputRequests']).to.have.keys('step1');
      const round2 = await modernResult(
        b,
        'tools/call',
        {
          ...call,
          inputResponses: { step1: { action: 'accept', content: { name: 'Ann' } } },
          requestState: round1['requestState'],
        },
        { capabilities },
      );
      expect(round2['inputRequests']).to.have.keys('step2');
      const done = await modernResult(
        a,
        'tools/call',
        {
          ...call,
          inputResponses: { step2: { action: 'accept', content: { color: 'red' } } },
          requestState: round2['requestState'],
        },
        { capabilities },
      );
      expect(done['content']).to.deep.equal([{ type: 'text', text: 'Ann likes red' }]);
      for (const result of [round1, round2, done]) expect(result).not.to.have.any.keys('ttlMs', 'cacheScope');
    });

    it('C26-MRTR-4: an input request the caller did not declare is 400 -32021 naming it, or the tool asks what was declared', async () => {
      const reply = await modernPost(a, 'tools/call', {
        name: 'test_input_required_result_elicitation',
        arguments: {},
      });
      expectError(reply, 400, -32021);
      expect(reply.body.error?.data).to.deep.equal({ requiredCapabilities: { elicitation: {} } });
      const degraded = await modernResult(
        a,
        'tools/call',
        { name: 'test_input_required_result_capabilities', arguments: {} },
        { capabilities: { sampling: {} } },
      );
      const requests = Object.values(degraded['inputRequests'] as Record<string, Record<string, unknown>>);
      expect(requests.map((request) => request['method'])).to.deep.equal(['sampling/createMessage']);
    });

    it('C26-MRTR-5: a tampered requestState, or one replayed by another caller or for other arguments, is -32602', async () => {
      const capabilities = { elicitation: {} };
      const round1 = await modernResult(
        a,
        'tools/call',
        { name: 'test_input_required_result_tampered_state', arguments: {} },
        { capabilities },
      );
      const state = round1['requestState'] as string;
      const tampered = `${state.slice(0, -2)}${state.endsWith('A') ? 'BB' : 'AA'}`;
      const bad = await modernPost(
        a,
        'tools/call',
        {
          name: 'test_input_required_result_tampered_state',
          arguments: {},
          inputResponses: {},
          requestState: tampered,
        },
        { capabilities },
      );
      expect(bad.body.error?.code).to.equal(-32602);
      const otherArgs = await modernPost(
        a,
        'tools/call',
        {
          name: 'test_input_required_result_tampered_state',
          arguments: { x: 1 },
          inputResponses: {},
          requestState: state,
        },
        { capabilities },
      );
      expect(otherArgs.body.error?.code).to.equal(-32602);
    });
  });

  describe('MRTR then a task (X-COMP-1)', () => {
    it('X-COMP-1, X-CRE-2, X-RES-3, X-GET-7: an inputFirst tool gathers its answer by MRTR, then the retry on the other replica answers CreateTaskResult', async () => {
      const capabilities = { ...WITH_TASKS, elicitation: {} };
      const call = { name: 'test_tool_with_task', arguments: {} };
      const round1 = await modernResult(a, 'tools/call', call, { capabilities });
      expect(round1['resultType']).to.equal('input_required');
      expect(round1).not.to.have.property('taskId');
      const [key] = Object.keys(round1['inputRequests'] as object);
      const round2 = await modernResult(
        b,
        'tools/call',
        {
          ...call,
          inputResponses: { [key as string]: { action: 'accept', content: { name: 'Alice' } } },
          requestState: round1['requestState'],
        },
        { capabilities },
      );
      expect(round2).to.include({ resultType: 'task' });
      expect(round2).not.to.have.any.keys('requestState', 'inputRequests');
      const done = await poll(a, round2['taskId'] as string, (task) => task['status'] === 'completed');
      expect((done['result'] as Record<string, unknown>)['content']).to.deep.equal([
        { type: 'text', text: 'Hello, Alice!' },
      ]);
      expect(done).not.to.have.property('requestState');
    });
  });

  describe('subscriptions/listen (C26-SUB-*)', () => {
    it('C26-SUB-1, C26-SUB-2, C26-SUB-3, X-NTF-1, X-NTF-4, X-NTF-5, C26-SUB-7: the ack first, then the task events made through the other replica', async () => {
      const created = await modernResult(
        b,
        'tools/call',
        { name: 'confirm_delete', arguments: { filename: 'f.txt' } },
        { capabilities: { ...WITH_TASKS, elicitation: {} } },
      );
      const taskId = created['taskId'] as string;
      const stream = await openStream(
        a,
        'subscriptions/listen',
        { notifications: { taskIds: [taskId, 'not-a-task'] } },
        { capabilities: WITH_TASKS, id: 'listen-1' },
      );
      try {
        expect(stream.status).to.equal(200);
        const ack = await stream.next();
        expect(ack['method']).to.equal('notifications/subscriptions/acknowledged');
        const ackParams = ack['params'] as Record<string, unknown>;
        expect(ackParams['_meta']).to.deep.equal({ 'io.modelcontextprotocol/subscriptionId': 'listen-1' });
        expect(ackParams['notifications']).to.deep.equal({ taskIds: [taskId] });
        let event: Record<string, unknown>;
        do {
          event = (await stream.next())['params'] as Record<string, unknown>;
          expect(event['_meta']).to.deep.equal({ 'io.modelcontextprotocol/subscriptionId': 'listen-1' });
          expect(event['taskId']).to.equal(taskId);
        } while (event['status'] !== 'input_required');
        const [key] = Object.keys(event['inputRequests'] as object);
        await modernResult(
          b,
          'tasks/update',
          { taskId, inputResponses: { [key as string]: { action: 'accept', content: { confirm: true } } } },
          { capabilities: WITH_TASKS },
        );
        do event = (await stream.next())['params'] as Record<string, unknown>;
        while (event['status'] !== 'completed');
        expect((event['result'] as Record<string, unknown>)['content']).to.deep.equal([
          { type: 'text', text: 'Deleted f.txt' },
        ]);
      } finally {
        stream.close();
      }
    });

    it('C26-SUB-4: a stream carries only what it asked for: the tasks it named, no other task, no list change, no progress', async () => {
      const call = (label: string) =>
        modernResult(
          a,
          'tools/call',
          { name: 'slow_compute', arguments: { seconds: 2, label } },
          { capabilities: WITH_TASKS },
        );
      const followed = (await call('followed'))['taskId'] as string;
      const other = (await call('other'))['taskId'] as string;
      const stream = await openStream(
        b,
        'subscriptions/listen',
        { notifications: { taskIds: [followed] } },
        { capabilities: WITH_TASKS },
      );
      try {
        const ack = await stream.next();
        expect((ack['params'] as Record<string, unknown>)['notifications']).to.deep.equal({ taskIds: [followed] });
        let event: Record<string, unknown>;
        do {
          const message = await stream.next();
          expect(message['method']).to.equal('notifications/tasks');
          event = message['params'] as Record<string, unknown>;
          expect(event['taskId']).to.equal(followed);
        } while (event['status'] !== 'completed');
        await poll(a, other, (task) => task['status'] === 'completed');
      } finally {
        stream.close();
      }
    });

    it('C26-SUB-6: tools are declared with listChanged; a stream that asks for it is told when a worker brings a new tool', async () => {
      const stream = await openStream(
        a,
        'subscriptions/listen',
        { notifications: { toolsListChanged: true, promptsListChanged: true } },
        { id: 'listen-tools' },
      );
      try {
        const ack = await stream.next();
        expect((ack['params'] as Record<string, unknown>)['notifications']).to.deep.equal({ toolsListChanged: true });
        const gamma = await system.addWorker({ MCPT_TOOLS: './test/fixtures/catalog/gamma.ts' });
        try {
          const changed = await stream.next();
          expect(changed['method']).to.equal('notifications/tools/list_changed');
          expect((changed['params'] as Record<string, unknown>)['_meta']).to.deep.equal({
            'io.modelcontextprotocol/subscriptionId': 'listen-tools',
          });
          const tools = (await modernResult(b, 'tools/list'))['tools'] as Record<string, unknown>[];
          expect(tools.map((tool) => tool['name'])).to.include('gamma');
        } finally {
          await gamma.stop();
        }
      } finally {
        stream.close();
      }
    });

    it('X-NTF-2: taskIds without the extension is 400 -32021', async () => {
      expectError(await modernPost(a, 'subscriptions/listen', { notifications: { taskIds: ['x'] } }), 400, -32021);
    });
  });
});

describe('MCP 2026-07-28 with authentication (X-SEC-2, C26-SEC-2)', function () {
  this.timeout(60_000);
  const ALICE = 'alice-key-0123456789';
  const BOB = 'bob-key-0123456789ab';
  let system: System;
  let url: string;

  before(async () => {
    system = await startSystem({
      env: { ...FIXTURES, AUTH_API_KEYS: `alice:${ALICE},bob:${BOB}`, MAX_STREAMS_PER_SESSION: '1' },
    });
    url = system.apiUrl;
  });
  after(async () => {
    await system?.stop();
  });

  it('every modern request is authenticated: none without a key (401)', async () => {
    const reply = await modernPost(url, 'server/discover');
    expect(reply.status).to.equal(401);
  });

  it('T-SEC-3, C26-ERR-2: open requests are bounded per caller (MAX_STREAMS_PER_SESSION): a listen stream holds the only slot; the refusal is -32000, outside the range 2026-07-28 reserves', async () => {
    const greet = { name: 'greet', arguments: { name: 'x' } };
    const stream = await openStream(
      url,
      'subscriptions/listen',
      { notifications: { toolsListChanged: true } },
      { bearer: ALICE },
    );
    try {
      expect((await stream.next())['method']).to.equal('notifications/subscriptions/acknowledged');
      const refused = await modernPost(url, 'tools/call', greet, { bearer: ALICE });
      expect(refused.body.error?.code).to.equal(-32000);
      expect(refused.body.error?.data).to.deep.equal({ limit: 'streams_per_caller', max: 1 });
      expect(await modernResult(url, 'tools/call', greet, { bearer: BOB })).to.include({ resultType: 'complete' });
    } finally {
      stream.close();
    }
    await eventually(
      async () => (await modernPost(url, 'tools/call', greet, { bearer: ALICE })).body.result,
      15_000,
      100,
    );
  });

  it("a task is bound to its principal: another principal's tasks/get, tasks/update and tasks/cancel are -32602", async () => {
    const created = await modernResult(
      url,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 60 } },
      { capabilities: WITH_TASKS, bearer: ALICE },
    );
    const taskId = created['taskId'] as string;
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const reply = await modernPost(
        url,
        method,
        { taskId, inputResponses: {} },
        { capabilities: WITH_TASKS, bearer: BOB },
      );
      expect(reply.body.error?.code, method).to.equal(-32602);
    }
    expect(await modernResult(url, 'tasks/get', { taskId }, { capabilities: WITH_TASKS, bearer: ALICE })).to.include({
      status: 'working',
    });
    await modernResult(url, 'tasks/cancel', { taskId }, { capabilities: WITH_TASKS, bearer: ALICE });
  });
});

describe('a replica that stops ends its listen streams (C26-SUB-5)', function () {
  this.timeout(60_000);
  let system: System;

  before(async () => {
    system = await startSystem({ env: FIXTURES });
  });
  after(async () => {
    await system?.stop();
  });

  it('C26-SUB-5: the stream gets the listen result, tagged with its subscription, before it closes', async () => {
    const api = system.apis[0]!;
    const stream = await openStream(
      api.url,
      'subscriptions/listen',
      { notifications: { toolsListChanged: true } },
      { id: 'listen-stop' },
    );
    try {
      expect((await stream.next())['method']).to.equal('notifications/subscriptions/acknowledged');
      const stopped = api.stop();
      let last: Record<string, unknown>;
      do last = await stream.next();
      while (!('id' in last));
      expect(last['id']).to.equal('listen-stop');
      const result = last['result'] as Record<string, unknown>;
      expect(result['resultType']).to.equal('complete');
      expect(result['_meta']).to.include({ 'io.modelcontextprotocol/subscriptionId': 'listen-stop' });
      await stopped;
    } finally {
      stream.close();
    }
  });
});

describe('MCP 2026-07-28: rate limits and the audit trail apply per request (C26-SEC-2, X-SEC-2)', function () {
  this.timeout(60_000);
  const ALICE = 'alice-key-0123456789';
  const BOB = 'bob-key-0123456789ab';
  let system: System;
  let url: string;

  before(async () => {
    system = await startSystem({
      env: {
        ...FIXTURES,
        AUTH_API_KEYS: `alice:${ALICE},bob:${BOB}`,
        RATE_LIMIT_PER_PRINCIPAL: '4',
        RATE_LIMIT_WINDOW_MS: '60000',
      },
    });
    url = system.apiUrl;
  });
  after(async () => {
    await system?.stop();
  });

  const auditRecords = () =>
    [...system.apis, ...system.workers]
      .flatMap((child) => child.records())
      .filter((record) => record['audit'] === true);

  it('C26-SEC-2, X-SEC-2: task operations are charged to the principal without a session, and creation, foreign lookups and refusals are audited', async () => {
    const created = await modernResult(
      url,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 0 } },
      { capabilities: WITH_TASKS, bearer: ALICE, id: 'modern-audit-create' },
    );
    const taskId = created['taskId'] as string;
    const foreign = await modernPost(url, 'tasks/get', { taskId }, { capabilities: WITH_TASKS, bearer: BOB });
    expect(foreign.body.error?.code).to.equal(-32602);
    // Alice has four task operations per window: the creation took one, so the fourth tasks/get is refused.
    const replies: ModernReply[] = [];
    for (let i = 0; i < 4; i++) {
      replies.push(await modernPost(url, 'tasks/get', { taskId }, { capabilities: WITH_TASKS, bearer: ALICE }));
    }
    expect(replies.slice(0, 3).every((reply) => reply.body.result !== undefined)).to.equal(true);
    const refused = replies[3] as ModernReply;
    expect(refused.body.error?.code).to.equal(-32000);
    expect(refused.body.error?.data).to.include({ limit: 'principal', max: 4 });
    // Another principal is not affected.
    expect(
      await modernResult(url, 'tools/call', { name: 'greet', arguments: { name: 'b' } }, { bearer: BOB }),
    ).to.include({ resultType: 'complete' });
    const records = await eventually(() => {
      const all = auditRecords();
      return all.some((r) => r['event'] === 'access.rejected' && r['reason'] === 'rate_limited') ? all : undefined;
    });
    expect(records.find((r) => r['event'] === 'task.created' && r['taskId'] === taskId)).to.deep.include({
      principal: 'principal:key:alice',
      requestId: 'modern-audit-create',
    });
    expect(records.find((r) => r['event'] === 'access.rejected' && r['reason'] === 'task_not_found')).to.deep.include({
      principal: 'principal:key:bob',
      method: 'tasks/get',
    });
    expect(records.find((r) => r['event'] === 'access.rejected' && r['reason'] === 'rate_limited')).to.deep.include({
      principal: 'principal:key:alice',
      method: 'tasks/get',
      scope: 'principal',
    });
  });
});
