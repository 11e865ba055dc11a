// Task handles (issue 40, docs/clients.md): a client that did not negotiate Tasks calls a tool that outlives its own
// request timeout, gets a handle at HANDLE_AFTER_MS, and follows it to the tool's result through the handle tools.
// Proven with the official clients on both wires (the SDK 1.x on 2025-11-25, client 2.x on 2026-07-28 without the
// extension), with the timings of the real thing shortened and their ratio kept: the client times out at 2 s, the tool
// runs 3 s, the handle comes at 1 s. The rules of the task methods hold for the handle tools (owner, not-found, the
// failed-lookup budget), input_required is answered through them, and a client that negotiated Tasks sees none of it.
import { writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { eventually, expectRpcError, McpTestClient, sleep } from '../support/mcp-client.ts';
import { MODERN, modernPost, modernResult, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { SseConnection } from '../support/sse-client.ts';
import { track } from '../support/resources.ts';

const FIXTURES = './test/fixtures/handles/tools.ts';
const HANDLE_AFTER_MS = 1000;
/** The clients' request timeout here, the TypeScript SDK's 60 s scaled down with the tool's 90 s (2 s : 3 s). */
const CLIENT_TIMEOUT_MS = 2000;
const TOOL_SECONDS = 3;
const POLL_INTERVAL_MS = 200;
const FAILED_LOOKUPS = 3;
const JSON_ONLY = { headers: { accept: 'application/json' } };

type ToolResult = { content: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean };

const structured = (result: ToolResult) => result.structuredContent as Record<string, unknown>;

describe('task handles: clients without Tasks follow long calls through handle tools (issue 40)', function () {
  this.timeout(60_000);
  let system: System;
  const open: { close(): Promise<void> }[] = [];

  before(async () => {
    system = await startSystem({
      env: {
        MCPT_TOOLS: FIXTURES,
        HANDLE_AFTER_MS: String(HANDLE_AFTER_MS),
        PROGRESS_KEEPALIVE_MS: '300',
        TASK_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS),
        RATE_LIMIT_FAILED_LOOKUPS: String(FAILED_LOOKUPS),
        RATE_LIMIT_WINDOW_MS: '60000',
        RESULT_RECHECK_MS: '1000',
      },
    });
    const client = await McpTestClient.connect(system.apiUrl);
    await eventually(async () => {
      const { tools } = (await client.call('tools/list')) as { tools: { name: string }[] };
      return tools.some((tool) => tool.name === 'quiet') ? true : undefined;
    });
    await client.terminate();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
  });
  after(async () => {
    await system?.stop();
  });

  /** The SDK 1.x client as a host without Tasks sets it up: no `tasks` capability; every message it sends or gets. */
  async function connectV1(capabilities: Record<string, unknown> = {}) {
    const client = new ClientV1({ name: 'handles-v1', version: '1.0.0' }, { capabilities });
    const transport = new TransportV1(new URL(system.apiUrl));
    const release = track('handles sdk v1 client', async () => {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    });
    open.push({ close: release });
    await client.connect(transport);
    const transcript: { direction: '->' | '<-'; message: JSONRPCMessage | JSONRPCMessage[] }[] = [];
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      transcript.push({ direction: '->', message });
      return send(message, options);
    };
    const receive = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      transcript.push({ direction: '<-', message });
      receive?.(message);
    };
    return { client, transcript };
  }

  async function connectV2(): Promise<ClientV2> {
    const client = new ClientV2(
      { name: 'handles-v2', version: '1.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } },
    );
    await client.connect(new TransportV2(new URL(system.apiUrl)));
    open.push(client);
    return client;
  }

  /** Calls task_status as a model following the handle would: at the suggested interval, until the task ended. */
  async function followUntilEnded(
    call: (name: string, args: Record<string, unknown>) => Promise<ToolResult>,
    taskId: string,
  ) {
    const seen: string[] = [];
    for (let polls = 0; polls < 100; polls++) {
      const status = structured(await call('task_status', { taskId }));
      seen.push(String(status['status']));
      if (['completed', 'failed', 'cancelled'].includes(String(status['status']))) return { status, seen };
      await sleep(Number(status['pollInterval']));
    }
    throw new Error(`task ${taskId} did not end`);
  }

  describe('the official TypeScript SDK 1.x, without the tasks capability (2025-11-25)', () => {
    it('lists the handle tools, a required tool as optional, and no outputSchema on tools that may be handed out', async () => {
      const { client } = await connectV1();
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      for (const name of ['task_status', 'task_result', 'task_cancel', 'task_answer']) {
        expect(byName.get(name)?.execution?.taskSupport, name).to.equal('forbidden');
      }
      expect(byName.get('quiet_required')?.execution?.taskSupport).to.equal('optional');
      expect(byName.get('quiet_forbidden')?.execution?.taskSupport).to.equal('forbidden');
      expect(byName.get('quiet')?.outputSchema).to.equal(undefined);
    });

    it('a call that outlives the client timeout (2 s; the tool runs 3 s) is answered with a handle at HANDLE_AFTER_MS, and task_status then task_result give its result', async () => {
      const { client, transcript } = await connectV1();
      await client.listTools();
      const call = (name: string, args: Record<string, unknown>) =>
        client.callTool({ name, arguments: args }, CallToolResultSchema, {
          timeout: CLIENT_TIMEOUT_MS,
        }) as Promise<ToolResult>;
      const started = Date.now();
      const handle = await call('quiet', { seconds: TOOL_SECONDS });
      const waited = Date.now() - started;
      expect(waited)
        .to.be.at.least(HANDLE_AFTER_MS - 50)
        .and.below(CLIENT_TIMEOUT_MS);
      const facts = structured(handle);
      expect(facts).to.include({ tool: 'quiet', status: 'working', pollInterval: POLL_INTERVAL_MS });
      const taskId = String(facts['taskId']);
      expect(taskId).to.match(/^[0-9a-f-]{36}$/);
      expect((handle.content[0] as { text: string }).text).to.match(/^Started task [0-9a-f-]{36}: .*`task_status`/);
      const { status, seen } = await followUntilEnded(call, taskId);
      expect(seen[0]).to.equal('working');
      expect(status).to.include({ taskId, status: 'completed' });
      expect(status['result']).to.deep.include({ structuredContent: { slept: TOOL_SECONDS } });
      const result = await call('task_result', { taskId });
      expect(result.content).to.deep.equal([{ type: 'text', text: `Slept ${TOOL_SECONDS}s` }]);
      expect(result.structuredContent).to.deep.equal({ slept: TOOL_SECONDS });
      // docs/clients.md shows this conversation as the SDK saw it.
      if (process.env['HANDLES_TRANSCRIPT'])
        writeFileSync(process.env['HANDLES_TRANSCRIPT'], JSON.stringify(transcript, null, 2));
    });

    it('a tool that requires a task (quiet_required) is usable: called plainly, handed out, its result from task_result', async () => {
      const { client } = await connectV1();
      await client.listTools();
      const call = (name: string, args: Record<string, unknown>) =>
        client.callTool({ name, arguments: args }, CallToolResultSchema, {
          timeout: CLIENT_TIMEOUT_MS,
        }) as Promise<ToolResult>;
      const handle = await call('quiet_required', { seconds: 1.5 });
      const taskId = String(structured(handle)['taskId']);
      const result = await eventually(async () => {
        const answer = await call('task_result', { taskId });
        return answer.structuredContent === undefined ? answer : undefined;
      });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'Slept 1.5s as a task' }]);
    });

    it('keeps a waiting call alive with progress: a tool that never hands out (forbidden) runs 3 s past a 1 s timeout reset on progress, the progress values increasing', async () => {
      const { client } = await connectV1();
      const progress: number[] = [];
      const result = (await client.callTool(
        { name: 'quiet_forbidden', arguments: { seconds: TOOL_SECONDS } },
        CallToolResultSchema,
        {
          timeout: 1000,
          resetTimeoutOnProgress: true,
          onprogress: (update) => progress.push(update.progress),
        },
      )) as ToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: `Slept ${TOOL_SECONDS}s in the request` }]);
      expect(progress.length).to.be.at.least(3);
      for (let i = 1; i < progress.length; i++) expect(progress[i]).to.be.above(progress[i - 1] as number);
    });

    it('task_cancel stops a handed-out task: task_status says cancelled, task_result answers -32800 as tasks/result does', async () => {
      const { client } = await connectV1();
      const call = (name: string, args: Record<string, unknown>) =>
        client.callTool({ name, arguments: args }, CallToolResultSchema) as Promise<ToolResult>;
      const taskId = String(structured(await call('quiet', { seconds: 30 }))['taskId']);
      const cancelled = await call('task_cancel', { taskId });
      expect(structured(cancelled)).to.include({ taskId, status: 'cancelled' });
      expect(structured(await call('task_status', { taskId }))['status']).to.equal('cancelled');
      const error = await call('task_result', { taskId }).then(
        () => undefined,
        (failure: unknown) => failure as { code: number },
      );
      expect(error?.code).to.equal(-32800);
    });
  });

  describe('the official TypeScript client 2.x on 2026-07-28, without the tasks extension', () => {
    it('a call that outlives the client timeout is answered with a handle, and task_status then task_result give its result', async () => {
      const client = await connectV2();
      const call = (name: string, args: Record<string, unknown>) =>
        client.callTool({ name, arguments: args }, { timeout: CLIENT_TIMEOUT_MS }) as Promise<ToolResult>;
      const started = Date.now();
      const handle = await call('quiet', { seconds: TOOL_SECONDS });
      expect(Date.now() - started)
        .to.be.at.least(HANDLE_AFTER_MS - 50)
        .and.below(CLIENT_TIMEOUT_MS);
      const taskId = String(structured(handle)['taskId']);
      expect(structured(handle)).to.include({ tool: 'quiet', status: 'working' });
      const { status } = await followUntilEnded(call, taskId);
      expect(status).to.include({ taskId, status: 'completed' });
      const result = await call('task_result', { taskId });
      expect(result.content).to.deep.equal([{ type: 'text', text: `Slept ${TOOL_SECONDS}s` }]);
    });

    it('X-NEG-5: a tool that requires a task is still refused with -32021 there (the extension is the way in)', async () => {
      const reply = await modernPost(system.apiUrl, 'tools/call', {
        name: 'quiet_required',
        arguments: { seconds: 0 },
      });
      expect(reply.status).to.equal(400);
      expect(reply.body.error?.code).to.equal(-32021);
    });

    it('keeps a waiting call alive with progress: 3 s past a 1 s timeout reset on progress', async () => {
      const client = await connectV2();
      const progress: number[] = [];
      const result = (await client.callTool(
        { name: 'quiet_forbidden', arguments: { seconds: TOOL_SECONDS } },
        { timeout: 1000, resetTimeoutOnProgress: true, onprogress: (update) => progress.push(update.progress) },
      )) as ToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: `Slept ${TOOL_SECONDS}s in the request` }]);
      expect(progress.length).to.be.at.least(3);
    });

    it('C26-MTH-2: tools/list is the same with or without the extension, the handle tools included', async () => {
      const plain = (await modernResult(system.apiUrl, 'tools/list'))['tools'] as { name: string }[];
      const declared = (await modernResult(system.apiUrl, 'tools/list', {}, { capabilities: WITH_TASKS }))['tools'];
      expect(declared).to.deep.equal(plain);
      expect(plain.map((tool) => tool.name)).to.include.members([
        'task_status',
        'task_result',
        'task_cancel',
        'task_answer',
      ]);
    });

    it('input_required after the hand-out: task_status says what is asked, task_answer answers it', async () => {
      const capabilities = { elicitation: {} };
      const handle = await modernResult(
        system.apiUrl,
        'tools/call',
        { name: 'ask_later', arguments: { seconds: 1.5 } },
        { capabilities },
      );
      const taskId = String(structured(handle as ToolResult)['taskId']);
      const asking = await eventually(async () => {
        const status = structured(
          (await modernResult(system.apiUrl, 'tools/call', {
            name: 'task_status',
            arguments: { taskId },
          })) as ToolResult,
        );
        return status['status'] === 'input_required' ? status : undefined;
      });
      const [key, request] =
        Object.entries(
          asking['inputRequests'] as Record<string, { method: string; params: Record<string, unknown> }>,
        )[0] ?? [];
      expect(request).to.deep.include({ method: 'elicitation/create' });
      expect(request?.params['message']).to.equal('Which word?');
      await modernResult(system.apiUrl, 'tools/call', {
        name: 'task_answer',
        arguments: { taskId, inputResponses: { [String(key)]: { action: 'accept', content: { word: 'teal' } } } },
      });
      // task_result waits up to HANDLE_AFTER_MS; a task still running then is answered with its status.
      const result = await eventually(async () => {
        const answer = (await modernResult(system.apiUrl, 'tools/call', {
          name: 'task_result',
          arguments: { taskId },
        })) as ToolResult;
        return answer.structuredContent === undefined ? answer : undefined;
      });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'The word is teal' }]);
    });
  });

  describe('the rules of the task methods, on the handle tools (a raw 2025-11-25 client)', () => {
    /** A session without the tasks capability, answered as JSON (no SSE: the handle comes as the request's answer). */
    async function connectRaw(capabilities: Record<string, unknown> = {}): Promise<McpTestClient> {
      const client = new McpTestClient(system.apiUrl);
      await client.initialize('2025-11-25', capabilities);
      open.push({ close: () => client.terminate() });
      return client;
    }

    const handOut = async (client: McpTestClient, tool: string, args: Record<string, unknown>) =>
      String(
        structured((await client.call('tools/call', { name: tool, arguments: args }, JSON_ONLY)) as ToolResult)[
          'taskId'
        ],
      );

    it("T-SEC-1, T-ERR-1: another session's handle and an unknown id get the -32602 tasks/get gives; invariant 5", async () => {
      const owner = await connectRaw();
      const stranger = await connectRaw();
      const taskId = await handOut(owner, 'quiet', { seconds: 30 });
      const foreign = await expectRpcError(
        stranger.call('tools/call', { name: 'task_status', arguments: { taskId } }),
        -32602,
      );
      const unknown = await expectRpcError(
        stranger.call('tools/call', {
          name: 'task_status',
          arguments: { taskId: '00000000-0000-4000-8000-000000000000' },
        }),
        -32602,
      );
      const viaTasksGet = await expectRpcError(stranger.call('tasks/get', { taskId }), -32602);
      expect(foreign.message).to.equal(unknown.message).and.equal(viaTasksGet.message);
      // T-TOOL-2: the handle tools are listed forbidden as tasks, and are refused as one.
      await expectRpcError(
        owner.call('tools/call', { name: 'task_status', arguments: { taskId }, task: {} }),
        -32601,
        /cannot be called as a task/,
      );
      await owner.call('tools/call', { name: 'task_cancel', arguments: { taskId } });
    });

    it('T-SEC-3: failed handle lookups count against the failed-lookup budget, which then refuses the handle tools', async () => {
      const client = await connectRaw();
      const taskId = await handOut(client, 'quiet', { seconds: 30 });
      for (let i = 0; i < FAILED_LOOKUPS; i++) {
        await expectRpcError(
          client.call('tools/call', { name: 'task_status', arguments: { taskId: `not-a-task-${i}` } }),
          -32602,
        );
      }
      await expectRpcError(
        client.call('tools/call', { name: 'task_status', arguments: { taskId } }),
        -32029,
        /lookups of unknown task ids by this requestor .*RATE_LIMIT_FAILED_LOOKUPS/,
      );
    });

    it('a handed-out call is a task of its session: tasks/get and tasks/list show it', async () => {
      const client = await connectRaw();
      const taskId = await handOut(client, 'quiet', { seconds: 30 });
      expect(await client.call('tasks/get', { taskId })).to.include({ taskId, status: 'working' });
      const { tasks } = (await client.call('tasks/list')) as { tasks: { taskId: string }[] };
      expect(tasks.map((task) => task.taskId)).to.include(taskId);
      await client.call('tools/call', { name: 'task_cancel', arguments: { taskId } });
    });

    it('an answer stream resumed with Last-Event-ID hands the call out at the same deadline, counted from the call', async () => {
      const client = await connectRaw();
      const headers = {
        'content-type': 'application/json',
        'mcp-session-id': String(client.sessionId),
        'mcp-protocol-version': client.protocolVersion,
      };
      const started = Date.now();
      const first = await SseConnection.open(client.url, {
        method: 'POST',
        headers: { ...headers, accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'resumed-call',
          method: 'tools/call',
          params: { name: 'ticking', arguments: { seconds: TOOL_SECONDS }, _meta: { progressToken: 'tick' } },
        }),
      });
      const progress = await first.next(
        (event) => event.message['method'] === 'notifications/progress' && event.id !== undefined,
      );
      await first.close();
      const resumed = await SseConnection.open(client.url, {
        method: 'GET',
        headers: { ...headers, accept: 'text/event-stream', 'last-event-id': String(progress.id) },
      });
      const answer = await resumed.next((event) => event.message['id'] === 'resumed-call', 5000);
      await resumed.close();
      expect(Date.now() - started, 'handed out before the tool ended').to.be.below(TOOL_SECONDS * 1000);
      const result = answer.message['result'] as ToolResult;
      expect(structured(result)).to.include({ tool: 'ticking', status: 'working' });
      await client.call('tools/call', { name: 'task_cancel', arguments: { taskId: structured(result)['taskId'] } });
    });

    it('T-INPUT-1: input_required through the handle tools: task_status says what is asked, task_answer answers it', async () => {
      const client = await connectRaw({ elicitation: {} });
      const taskId = await handOut(client, 'ask_later', { seconds: 1.5 });
      const call = async (name: string, args: Record<string, unknown>) =>
        (await client.call('tools/call', { name, arguments: args }, JSON_ONLY)) as ToolResult;
      const asking = await eventually(async () => {
        const status = await call('task_status', { taskId });
        return structured(status)['status'] === 'input_required' ? status : undefined;
      });
      expect((asking.content[0] as { text: string }).text).to.match(
        /It asks:\n- key ".+", elicitation\/create: Which word\?/,
      );
      const [key] = Object.keys(structured(asking)['inputRequests'] as Record<string, unknown>);
      await call('task_answer', {
        taskId,
        inputResponses: { [String(key)]: { action: 'accept', content: { word: 'amber' } } },
      });
      const result = await eventually(async () => {
        const answer = await call('task_result', { taskId });
        return answer.structuredContent === undefined ? answer : undefined;
      });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'The word is amber' }]);
    });

    it('a client that negotiated Tasks sees none of it: no handle tools, a long plain call answered with its result, a required tool refused (T-TOOL-4)', async () => {
      const client = await connectRaw({ tasks: {} });
      const { tools } = (await client.call('tools/list')) as {
        tools: { name: string; execution?: unknown; outputSchema?: unknown }[];
      };
      expect(tools.map((tool) => tool.name)).to.not.include('task_status');
      expect(tools.find((tool) => tool.name === 'quiet_required')?.execution).to.deep.equal({
        taskSupport: 'required',
      });
      expect(tools.find((tool) => tool.name === 'quiet')?.outputSchema).to.be.an('object');
      const result = (await client.call(
        'tools/call',
        { name: 'quiet', arguments: { seconds: 1.5 } },
        JSON_ONLY,
      )) as ToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: 'Slept 1.5s' }]);
      await expectRpcError(client.call('tools/call', { name: 'quiet_required', arguments: { seconds: 0 } }), -32601);
      await expectRpcError(
        client.call('tools/call', { name: 'task_status', arguments: { taskId: 'x' } }),
        -32602,
        /Unknown tool/,
      );
    });
  });
});

describe('TASK_HANDLES=off: clients without Tasks get what they got before (issue 40)', function () {
  this.timeout(60_000);
  let system: System;

  before(async () => {
    system = await startSystem({
      env: { MCPT_TOOLS: FIXTURES, TASK_HANDLES: 'off', HANDLE_AFTER_MS: String(HANDLE_AFTER_MS) },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('T-TOOL-4: no handle tools, a long plain call waits for its result, a required tool is -32601', async () => {
    const client = new McpTestClient(system.apiUrl);
    await client.initialize('2025-11-25', {});
    try {
      const { tools } = await eventually(async () => {
        const listing = (await client.call('tools/list')) as { tools: { name: string; execution?: unknown }[] };
        return listing.tools.some((tool) => tool.name === 'quiet') ? listing : undefined;
      });
      expect(tools.map((tool) => tool.name)).to.not.include('task_status');
      expect(tools.find((tool) => tool.name === 'quiet_required')?.execution).to.deep.equal({
        taskSupport: 'required',
      });
      const result = (await client.call(
        'tools/call',
        { name: 'quiet', arguments: { seconds: 1.5 } },
        JSON_ONLY,
      )) as ToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: 'Slept 1.5s' }]);
      await expectRpcError(client.call('tools/call', { name: 'quiet_required', arguments: { seconds: 0 } }), -32601);
      const modern = await modernPost(system.apiUrl, 'tools/list');
      expect((modern.body.result?.['tools'] as { name: string }[]).map((tool) => tool.name)).to.not.include(
        'task_status',
      );
    } finally {
      await client.terminate();
    }
  });
});
