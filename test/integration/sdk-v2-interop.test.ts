// Interop with clients we did not write, in one run against the same api replicas and worker: the official
// TypeScript client 2.x (@modelcontextprotocol/client) in `auto` mode, pinned to 2026-07-28 and in its default
// legacy mode; the ext-tasks requester library (@modelcontextprotocol/ext-tasks 0.2.2) for task calls on the
// extension's wire (create, poll, input through tasks/update, cancel), created on one replica and followed on the
// other; and the SDK v1 client on the 2025-11-25 wire.
import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type RawClientDispatch,
} from '@modelcontextprotocol/ext-tasks/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseSse } from '@mcp-tasks/client';
import { nameOf } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/processes.ts';

const FIXTURES = { MCPT_TOOLS: './scripts/conformance/tools.ts' };
const MODERN = '2026-07-28';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';

describe('interop: MCP TypeScript client 2.x, ext-tasks 0.2.2 and SDK v1 against the same api replicas', function () {
  this.timeout(60_000);
  let system: System;
  let a: string;
  let b: string;
  const open: { close(): Promise<void> }[] = [];

  before(async () => {
    system = await startSystem({ apis: 2, env: FIXTURES });
    a = system.apis[0]?.url as string;
    b = system.apis[1]?.url as string;
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
  });
  after(async () => {
    await system?.stop();
  });

  async function connectV2(url: string, mode: 'legacy' | 'auto' | { pin: string }): Promise<Client> {
    const client = new Client(
      { name: 'interop-v2', version: '1.0.0' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode } },
    );
    client.setRequestHandler('elicitation/create', () =>
      Promise.resolve({ action: 'accept' as const, content: { name: 'Alice', confirm: true } }),
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    open.push(client);
    return client;
  }

  /**
   * The host's raw path for the extension's wire (ext-tasks frames `_meta` itself): the routing headers, and the
   * replica each request goes to — tools/call to the first, everything after to the second.
   */
  function rawDispatch(): RawClientDispatch {
    let id = 0;
    return async (request) => {
      const message = request as Record<string, unknown>;
      const method = String(message['method']);
      const params = (message['params'] ?? {}) as Record<string, unknown>;
      const name = nameOf(method, params);
      const res = await fetch(method === 'tools/call' ? a : b, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': method,
          ...(name !== undefined ? { 'mcp-name': name } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: `raw-${++id}`, ...message }),
      });
      const text = await res.text();
      const body = (
        (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
          ? parseSse(text).at(-1)?.message
          : JSON.parse(text)
      ) as { result?: never; error?: never };
      return body.error !== undefined
        ? { kind: 'error', error: body.error }
        : { kind: 'result', result: body.result ?? {} };
    };
  }

  function taskSession(client: Client) {
    return createTaskSessionFromClient(client, {
      endpointId: 'interop',
      rawDispatch: rawDispatch(),
      v2RequestFraming: {
        protocolVersion: MODERN,
        clientInfo: { name: 'interop-ext-tasks', version: '1.0.0' },
        clientCapabilities: { elicitation: {}, extensions: { [TASKS_EXT]: {} } },
      },
      onInputRequest: (request) =>
        Promise.resolve(
          request.kind === 'elicitation' ? { action: 'accept', content: { confirm: true } } : ({ roots: [] } as never),
        ) as never,
    });
  }

  it('C26-COEX-2: client 2.x in auto mode probes server/discover and lands on 2026-07-28', async () => {
    const client = await connectV2(a, 'auto');
    expect(client.getProtocolEra()).to.equal('modern');
    expect(client.getNegotiatedProtocolVersion()).to.equal(MODERN);
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).to.include('greet');
    const result = await client.callTool({ name: 'greet', arguments: { name: 'auto' } });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Hello, auto!' }]);
  });

  it('C26-COEX-5, C26-MRTR-2: client 2.x in auto mode, the SDK v1 client and a legacy-mode 2.x client connect together and each completes in its era', async () => {
    const [auto, legacy] = await Promise.all([connectV2(a, 'auto'), connectV2(a, 'legacy')]);
    const v1 = new ClientV1({ name: 'interop-v1-together', version: '1.0.0' });
    await v1.connect(new TransportV1(new URL(a)));
    open.push(v1);
    expect(auto.getNegotiatedProtocolVersion()).to.equal(MODERN);
    expect(legacy.getProtocolEra()).to.equal('legacy');
    expect(v1.getServerCapabilities()?.tasks).to.be.an('object');
    // In auto mode an elicitation is an MRTR round the client answers with its handler, then retries.
    const [modernCall, legacyCall, v1Call] = await Promise.all([
      auto.callTool({ name: 'test_input_required_result_elicitation', arguments: {} }),
      legacy.callTool({ name: 'greet', arguments: { name: 'legacy' } }),
      v1.callTool({ name: 'greet', arguments: { name: 'v1' } }),
    ]);
    expect(modernCall.content).to.deep.equal([{ type: 'text', text: 'Hello, Alice!' }]);
    expect(legacyCall.content).to.deep.equal([{ type: 'text', text: 'Hello, legacy!' }]);
    expect(v1Call.content).to.deep.equal([{ type: 'text', text: 'Hello, v1!' }]);
  });

  it('X-NEG-3: ext-tasks, declaring the extension, takes either shape the server picks: a synchronous tool answers at once, a long one as a task', async () => {
    const client = await connectV2(a, 'auto');
    const session = taskSession(client);
    open.push(session);
    const immediate = await session.callTool('greet', { name: 'either' });
    expect(immediate.kind).to.equal('immediate');
    const now = resultFromTaskOutcome((await immediate.settle()).outcome) as { content: unknown[] };
    expect(now.content).to.deep.equal([{ type: 'text', text: 'Hello, either!' }]);
    const task = await session.callTool('slow_compute', { seconds: 0, label: 'either' });
    expect(task.kind).to.equal('task');
    const later = resultFromTaskOutcome((await task.settle()).outcome) as { content: unknown[] };
    expect(later.content).to.deep.equal([{ type: 'text', text: 'Computed either in 0s' }]);
  });

  it('C26-MRTR-2: client 2.x pinned to 2026-07-28 answers an MRTR round with its elicitation handler', async () => {
    const client = await connectV2(b, { pin: MODERN });
    expect(client.getNegotiatedProtocolVersion()).to.equal(MODERN);
    const result = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Hello, Alice!' }]);
  });

  it('C26-COEX-4: client 2.x in its default (legacy) mode initializes a 2025-11-25 session', async () => {
    const client = await connectV2(a, 'legacy');
    expect(client.getProtocolEra()).to.equal('legacy');
    const result = await client.callTool({ name: 'greet', arguments: { name: 'legacy' } });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Hello, legacy!' }]);
  });

  it('X-CAP-1, X-GET-1: ext-tasks sees the extension, creates a task on one replica and settles it polling the other', async () => {
    const client = await connectV2(a, { pin: MODERN });
    const session = taskSession(client);
    open.push(session);
    const execution = await session.callTool('slow_compute', { seconds: 1, label: 'ext' });
    expect(execution.kind).to.equal('task');
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome) as { content: unknown[] };
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Computed ext in 1s' }]);
  });

  it('X-UPD-1: ext-tasks answers the task input requests with tasks/update (on the other replica)', async () => {
    const client = await connectV2(a, { pin: MODERN });
    const session = taskSession(client);
    open.push(session);
    const execution = await session.callTool('confirm_delete', { filename: 'report.pdf' });
    expect(execution.kind).to.equal('task');
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome) as { content: unknown[] };
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Deleted report.pdf' }]);
  });

  it('X-CAN-2: ext-tasks cancels a running task (on the other replica) and sees it cancelled', async () => {
    const client = await connectV2(a, { pin: MODERN });
    const session = taskSession(client);
    open.push(session);
    const execution = await session.callTool('slow_compute', { seconds: 60, label: 'cancel' });
    expect(execution.kind).to.equal('task');
    await execution.cancel();
    const { outcome } = await execution.settle();
    expect(outcome.status).to.equal('cancelled');
  });

  it('C26-LEG-1: the SDK v1 client in the same run still gets 2025-11-25 core tasks', async () => {
    const client = new ClientV1({ name: 'interop-v1', version: '1.0.0' });
    await client.connect(new TransportV1(new URL(b)));
    open.push(client);
    expect(client.getServerCapabilities()?.tasks).to.be.an('object');
    const result = await client.callTool({ name: 'greet', arguments: { name: 'v1' } });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Hello, v1!' }]);
  });
});
