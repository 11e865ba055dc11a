// Session lifecycle through an api and a worker (in process, test/support/in-process.ts): initialize and version negotiation, declared capabilities, ping,
// tools/list, DELETE, idle expiry, and sessions kept in Redis so that any api replica serves them.
import { expect } from 'chai';
import { toolRegistry } from '@mcp-tasks/tools';
import { McpTestClient, sleep, type RpcReply } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { rawRequest } from '../support/raw-http.ts';

const SESSION_IDLE_TTL_MS = 2000;
const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

function initializeMessage(protocolVersion: unknown, extra: Record<string, unknown> = {}) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'lifecycle-test', version: '1.0.0' }, ...extra },
  };
}

describe('session lifecycle (2 api replicas + worker, real Redis)', function () {
  this.timeout(20_000);
  let system: System;

  before(async function () {
    // Starting processes on a loaded machine can take longer than a test may; startSystem has its own 60 s bound.
    this.timeout(90_000);
    system = await startSystem({ apis: 2, env: { SESSION_IDLE_TTL_MS: String(SESSION_IDLE_TTL_MS) } });
  });
  after(async () => {
    await system?.stop();
  });

  function apiUrl(index: number): string {
    return String(system.apis[index]?.url);
  }

  describe('initialize', () => {
    it('answers protocolVersion, capabilities and serverInfo, with a fresh visible-ASCII Mcp-Session-Id header', async () => {
      const reply = await new McpTestClient(system.apiUrl).post(initializeMessage('2025-11-25'));
      expect(reply.status).to.equal(200);
      const body = reply.json as RpcReply;
      expect(body.id).to.equal(1);
      expect(body.result).to.include.keys('protocolVersion', 'capabilities', 'serverInfo');
      expect(body.result?.['serverInfo']).to.deep.equal({ name: 'mcp-task-runner', version: '0.1.0' });
      expect(body.result?.['instructions']).to.be.a('string');
      const sessionId = reply.headers.get('mcp-session-id');
      expect(sessionId).to.match(/^[\x21-\x7e]{16,}$/);
      const again = await new McpTestClient(system.apiUrl).post(initializeMessage('2025-11-25'));
      expect(again.headers.get('mcp-session-id')).to.be.a('string').and.not.equal(sessionId);
    });

    it('sets the Mcp-Session-Id header also when the reply is an SSE stream', async () => {
      const reply = await new McpTestClient(system.apiUrl).post(initializeMessage('2025-11-25'), {
        accept: 'text/event-stream',
      });
      expect(reply.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect(reply.headers.get('mcp-session-id')).to.be.a('string').and.not.equal('');
      expect(reply.text).to.include('"protocolVersion":"2025-11-25"');
    });

    it('negotiates the version: a supported one is kept, an unknown one gets the latest (2025-11-25)', async () => {
      const cases: [string, string][] = [
        ['2025-11-25', '2025-11-25'],
        ['2025-06-18', '2025-06-18'],
        ['2025-03-26', '2025-03-26'],
        ['1999-01-01', '2025-11-25'],
        ['2099-12-31', '2025-11-25'],
      ];
      for (const [requested, negotiated] of cases) {
        const client = new McpTestClient(system.apiUrl);
        const result = await client.initialize(requested);
        expect(result['protocolVersion'], requested).to.equal(negotiated);
        // The session speaks the negotiated version from then on.
        expect(await client.call('ping')).to.deep.equal({});
      }
    });

    it('T-CAP-1, T-CAP-2, T-CAP-4: on 2025-11-25 capabilities.tasks declares list, cancel and tools/call only', async () => {
      const result = await new McpTestClient(system.apiUrl).initialize('2025-11-25');
      const capabilities = result['capabilities'] as Record<string, unknown>;
      expect(capabilities['tasks']).to.deep.equal(TASKS_CAPABILITY);
      expect(capabilities).to.have.property('tools');
    });

    it('T-CAP-1: on 2025-06-18 (before Tasks) there is no tasks capability', async () => {
      for (const version of ['2025-06-18', '2025-03-26']) {
        const result = await new McpTestClient(system.apiUrl).initialize(version);
        const capabilities = result['capabilities'] as Record<string, unknown>;
        expect(capabilities, version).to.not.have.property('tasks');
        expect(capabilities).to.have.property('tools');
      }
    });

    it('invalid initialize params are -32602 naming the field, and create no session', async () => {
      const client = new McpTestClient(system.apiUrl);
      const noClientInfo = await client.post({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {} },
      });
      expect((noClientInfo.json as RpcReply).error?.code).to.equal(-32602);
      expect((noClientInfo.json as RpcReply).error?.message).to.match(/Invalid params for initialize: clientInfo/);
      expect(noClientInfo.headers.get('mcp-session-id')).to.equal(null);
      const numericVersion = await client.post(initializeMessage(20251125));
      expect((numericVersion.json as RpcReply).error?.message).to.match(/protocolVersion/);
      expect(numericVersion.headers.get('mcp-session-id')).to.equal(null);
    });
  });

  describe('requests of a session', () => {
    it('ping answers an empty result', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      expect(await client.call('ping')).to.deep.equal({});
      expect(await client.call('ping', { _meta: { progressToken: 'p' } })).to.deep.equal({});
    });

    it('tools/list lists every registered tool (wait, crash, count_primes, echo, ...) with their execution.taskSupport and object input schemas', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const { tools } = (await client.call('tools/list')) as { tools: Record<string, unknown>[] };
      const support = Object.fromEntries(
        tools.map((tool) => [String(tool['name']), (tool['execution'] as { taskSupport: string }).taskSupport]),
      );
      // Every tool of the registry, each with its declared taskSupport.
      expect(support).to.deep.equal(
        Object.fromEntries(toolRegistry.list().map((tool) => [tool.name, tool.execution.taskSupport])),
      );
      expect(support).to.include({ wait: 'optional', crash: 'optional', count_primes: 'required', echo: 'forbidden' });
      for (const tool of tools) {
        expect(tool['description'], String(tool['name'])).to.be.a('string').and.not.equal('');
        const schema = tool['inputSchema'] as Record<string, unknown>;
        expect(schema['type'], String(tool['name'])).to.equal('object');
        expect(schema['properties']).to.be.an('object');
        expect(schema).to.not.have.property('$schema');
      }
      const wait = tools.find((tool) => tool['name'] === 'wait')?.['inputSchema'] as Record<string, unknown>;
      expect(wait['required']).to.deep.equal(['seconds']);
      expect(wait['properties']).to.have.keys('seconds', 'fail');
    });
  });

  describe('ending a session', () => {
    it('DELETE /mcp ends the session: 204, then its requests get 404 and a second DELETE 404', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const id = String(client.sessionId);
      const deleted = await rawRequest(system.apiUrl, { method: 'DELETE', headers: { 'mcp-session-id': id } });
      expect(deleted.status).to.equal(204);
      expect(deleted.text).to.equal('');
      const after = await client.post({ jsonrpc: '2.0', id: 9, method: 'ping' });
      expect(after.status).to.equal(404);
      expect((after.json as RpcReply).error?.message).to.match(/Session not found/);
      const again = await rawRequest(system.apiUrl, { method: 'DELETE', headers: { 'mcp-session-id': id } });
      expect(again.status).to.equal(404);
    });

    it('a DELETE through another api replica applies at once on a replica that served the session before', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      // This replica now knows the session's fields (it keeps them): only the session's existence is checked.
      expect(await client.call('ping')).to.deep.equal({});
      expect(await client.call('ping')).to.deep.equal({});
      const other = String(system.apis[1]?.url);
      const deleted = await rawRequest(other, {
        method: 'DELETE',
        headers: { 'mcp-session-id': String(client.sessionId) },
      });
      expect(deleted.status).to.equal(204);
      const after = await client.post({ jsonrpc: '2.0', id: 9, method: 'ping' });
      expect(after.status).to.equal(404);
    });

    it('DELETE of an unknown session is 404, without the header 400', async () => {
      const unknown = await rawRequest(system.apiUrl, {
        method: 'DELETE',
        headers: { 'mcp-session-id': 'no-such-session' },
      });
      expect(unknown.status).to.equal(404);
      expect((unknown.json as RpcReply).error?.message).to.match(/Session not found/);
      const missing = await rawRequest(system.apiUrl, { method: 'DELETE' });
      expect(missing.status).to.equal(400);
      expect((missing.json as RpcReply).error?.message).to.match(/Mcp-Session-Id header is required/);
    });

    it(`an idle session expires after SESSION_IDLE_TTL_MS (${SESSION_IDLE_TTL_MS} ms); each request restarts the clock`, async () => {
      const [busy, idle] = await Promise.all([
        McpTestClient.connect(system.apiUrl),
        McpTestClient.connect(system.apiUrl),
      ]);
      const started = Date.now();
      while (Date.now() - started < SESSION_IDLE_TTL_MS + 700) {
        expect(await busy.call('ping')).to.deep.equal({});
        await sleep(400);
      }
      expect((await idle.post({ jsonrpc: '2.0', id: 2, method: 'ping' })).status).to.equal(404);
      expect(await busy.call('ping')).to.deep.equal({});
    });
  });

  describe('sessions live in Redis', () => {
    it('a second api replica serves a session created on the first, its tasks included', async () => {
      const first = await McpTestClient.connect(apiUrl(0));
      expect(await system.redis.exists(`${system.prefix}:session:${String(first.sessionId)}`)).to.equal(1);
      const second = new McpTestClient(apiUrl(1));
      second.sessionId = first.sessionId;
      second.protocolVersion = first.protocolVersion;
      expect(await second.call('ping')).to.deep.equal({});
      expect(await second.call('tools/call', { name: 'echo', arguments: { text: 'via replica 2' } })).to.deep.equal({
        content: [{ type: 'text', text: 'via replica 2' }],
      });
      const task = await first.createTask('wait', { seconds: 0 });
      expect((await second.call('tasks/result', { taskId: task['taskId'] }))['content']).to.deep.equal([
        { type: 'text', text: 'Waited 0s' },
      ]);
      expect(((await second.call('tasks/list'))['tasks'] as { taskId: string }[]).map((t) => t.taskId)).to.deep.equal([
        task['taskId'],
      ]);
    });

    it('a DELETE on one replica ends the session on every replica', async () => {
      const first = await McpTestClient.connect(apiUrl(0));
      const deleted = await rawRequest(apiUrl(1), {
        method: 'DELETE',
        headers: { 'mcp-session-id': String(first.sessionId) },
      });
      expect(deleted.status).to.equal(204);
      expect((await first.post({ jsonrpc: '2.0', id: 3, method: 'ping' })).status).to.equal(404);
      expect(await system.redis.exists(`${system.prefix}:session:${String(first.sessionId)}`)).to.equal(0);
    });

    it('the session keeps its negotiated version on every replica (2025-06-18 has no tasks there either)', async () => {
      const old = await McpTestClient.connect(apiUrl(0), '2025-06-18');
      const other = new McpTestClient(apiUrl(1));
      other.sessionId = old.sessionId;
      other.protocolVersion = old.protocolVersion;
      const result = await other.call('tools/call', { name: 'wait', arguments: { seconds: 0 }, task: { ttl: 60_000 } });
      expect(result).to.deep.equal({ content: [{ type: 'text', text: 'Waited 0s' }] });
    });
  });
});
