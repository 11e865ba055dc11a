// Interop with code we did not write: the official MCP TypeScript SDK client (v1) drives real api and worker
// processes over its StreamableHTTPClientTransport. Exact checks go through `client.request` and
// `client.experimental.tasks.*`; `callToolStream` is only a "typical host" smoke test (docs/protocol.md).
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  type CallToolResult,
  type GetTaskResult,
} from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, RELATED_TASK_META_KEY } from '@mcp-tasks/protocol';
import { eventually, sleep } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/processes.ts';
import { track } from '../support/resources.ts';

const POLL_INTERVAL_MS = 250;

interface SdkConnection {
  client: Client;
  transport: StreamableHTTPClientTransport;
  close(): Promise<void>;
}

/** An SDK client connected to `url`; its session is deleted and its transport closed on close(). */
async function connectSdk(
  url: string,
  name = 'sdk-interop-test',
  setup: (client: Client) => void = () => undefined,
): Promise<SdkConnection> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
  setup(client);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const release = track(`sdk client ${name}`, async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
  try {
    await client.connect(transport);
  } catch (error) {
    await release();
    throw error;
  }
  return { client, transport, close: release };
}

/** Awaits a promise that must reject with the SDK's McpError, and returns that error. */
async function expectMcpError(promise: Promise<unknown>, code: number): Promise<McpError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(McpError);
    expect((error as McpError).code, (error as Error).message).to.equal(code);
    return error as McpError;
  }
  throw new Error(`expected an McpError ${code}`);
}

describe('interop: official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2)', function () {
  this.timeout(60_000);
  let system: System;
  let sdk: SdkConnection;

  before(async () => {
    system = await startSystem({ env: { TASK_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS) } });
    sdk = await connectSdk(system.apiUrl);
  });
  after(async () => {
    await sdk?.close();
    await system?.stop();
  });

  /** A task-augmented tools/call the exact way: CreateTaskResultSchema, task params in the request options. */
  async function createTask(name: string, args: Record<string, unknown>, ttl = 60_000) {
    const created = await sdk.client.request(
      { method: 'tools/call', params: { name, arguments: args } },
      CreateTaskResultSchema,
      { task: { ttl } },
    );
    return created.task;
  }

  /** Polls tasks/get as a client following the spec does: waiting pollInterval between polls. */
  async function pollUntilTerminal(
    taskId: string,
  ): Promise<{ final: GetTaskResult; polls: GetTaskResult[]; gaps: number[] }> {
    const polls: GetTaskResult[] = [];
    const gaps: number[] = [];
    let last = Date.now();
    for (;;) {
      const task = await sdk.client.experimental.tasks.getTask(taskId);
      polls.push(task);
      if (['completed', 'failed', 'cancelled'].includes(task.status)) return { final: task, polls, gaps };
      if (polls.length > 200) throw new Error(`task ${taskId} still ${task.status} after 200 polls`);
      await sleep(task.pollInterval ?? 1000);
      const now = Date.now();
      gaps.push(now - last);
      last = now;
    }
  }

  describe('lifecycle and discovery', () => {
    it('T-CAP-1: initialize negotiates 2025-11-25 and the SDK sees our tasks capability', () => {
      expect(sdk.transport.protocolVersion).to.equal(LATEST_PROTOCOL_VERSION);
      expect(sdk.transport.sessionId).to.be.a('string').and.not.empty;
      expect(sdk.client.getServerVersion()).to.include({ name: 'mcp-task-runner' });
      const capabilities = sdk.client.getServerCapabilities();
      expect(capabilities?.tasks).to.deep.equal({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
      expect(capabilities?.tools).to.be.an('object');
    });

    it('T-TOOL-1: tools/list through the SDK shows execution.taskSupport per tool', async () => {
      const { tools } = await sdk.client.listTools();
      const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
      expect(support).to.include({ wait: 'optional', crash: 'optional', echo: 'forbidden' });
    });

    it('a plain call of a forbidden-as-task tool (echo) answers its CallToolResult', async () => {
      const result = await sdk.client.callTool({ name: 'echo', arguments: { text: 'hello from the SDK' } });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'hello from the SDK' }]);
      expect(result.isError).to.not.equal(true);
    });

    it('ping answers through the SDK', async () => {
      expect(await sdk.client.ping()).to.deep.equal({});
    });
  });

  describe('tasks: exact checks (client.request + client.experimental.tasks)', () => {
    let completedId: string;

    it('T-CREATE-1, T-GET-3, T-CLIENT-1: a task-augmented wait is polled with getTask at pollInterval until completed', async () => {
      const task = await createTask('wait', { seconds: 1 }, 90_000);
      expect(task.status).to.equal('working');
      expect(task.ttl).to.equal(90_000);
      expect(task.pollInterval).to.equal(POLL_INTERVAL_MS);
      const { final, polls, gaps } = await pollUntilTerminal(task.taskId);
      completedId = task.taskId;
      expect(final.status).to.equal('completed');
      expect(final.taskId).to.equal(task.taskId);
      expect(final.createdAt).to.equal(task.createdAt);
      expect(polls.length, 'the task was seen working before it completed').to.be.at.least(2);
      expect(polls.every((poll) => poll.pollInterval === POLL_INTERVAL_MS)).to.equal(true);
      for (const gap of gaps) expect(gap).to.be.at.least(POLL_INTERVAL_MS - 5);
    });

    it('T-RES-3: getTaskResult returns the CallToolResult with the related-task _meta', async () => {
      const result: CallToolResult = await sdk.client.experimental.tasks.getTaskResult(
        completedId,
        CallToolResultSchema,
      );
      expect(result.content).to.deep.equal([{ type: 'text', text: 'Waited 1s' }]);
      expect(result._meta).to.deep.equal({ [RELATED_TASK_META_KEY]: { taskId: completedId } });
    });

    it('T-RES-2: getTaskResult on a working task blocks until it completes', async () => {
      const task = await createTask('wait', { seconds: 0.5 });
      const started = Date.now();
      const result = await sdk.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(Date.now() - started).to.be.above(250);
      expect(result.content).to.deep.equal([{ type: 'text', text: 'Waited 0.5s' }]);
    });

    it('T-LIST-3: listTasks includes the completed task', async () => {
      const { tasks } = await sdk.client.experimental.tasks.listTasks();
      const listed = tasks.find((task) => task.taskId === completedId);
      expect(listed).to.include({ taskId: completedId, status: 'completed' });
    });

    it('T-CANCEL-2: cancelTask on a long wait answers it cancelled; it stays cancelled and its result is an error', async () => {
      const task = await createTask('wait', { seconds: 30 });
      await eventually(async () => {
        const current = await sdk.client.experimental.tasks.getTask(task.taskId);
        return current.statusMessage?.startsWith('Running') ? current : undefined;
      });
      const cancelled = await sdk.client.experimental.tasks.cancelTask(task.taskId);
      expect(cancelled).to.include({ taskId: task.taskId, status: 'cancelled' });
      expect((await sdk.client.experimental.tasks.getTask(task.taskId)).status).to.equal('cancelled');
      await expectMcpError(sdk.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), -32800);
      const worker = system.workers[0];
      await eventually(() =>
        worker?.records().some((line) => line['taskId'] === task.taskId && line['message'] === 'tool stopped')
          ? true
          : undefined,
      );
    });

    it('T-LIFE-4, T-RES-1: a crash task ends failed and getTaskResult surfaces its JSON-RPC error with the related-task _meta', async () => {
      const task = await createTask('crash', { message: 'disk on fire' });
      const { final } = await pollUntilTerminal(task.taskId);
      expect(final.status).to.equal('failed');
      expect(final.statusMessage).to.equal("Tool 'crash' failed: disk on fire");
      const error = await expectMcpError(
        sdk.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
        -32603,
      );
      expect(error.message).to.contain("Tool 'crash' failed: disk on fire");
      expect(error.data).to.deep.equal({ tool: 'crash', _meta: { [RELATED_TASK_META_KEY]: { taskId: task.taskId } } });
    });

    it('T-LIFE-4: a wait with fail: true ends failed and getTaskResult returns its isError result', async () => {
      const task = await createTask('wait', { seconds: 0, fail: true });
      const result = await sdk.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.isError).to.equal(true);
      expect((await sdk.client.experimental.tasks.getTask(task.taskId)).status).to.equal('failed');
    });

    it('T-SEC-1: a second SDK client (another session) sees none of these tasks', async () => {
      const other = await connectSdk(system.apiUrl, 'sdk-interop-stranger');
      try {
        expect((await other.client.experimental.tasks.listTasks()).tasks).to.deep.equal([]);
        await expectMcpError(other.client.experimental.tasks.getTask(completedId), -32602);
      } finally {
        await other.close();
      }
    });
  });

  describe('a typical host: callToolStream (smoke test)', () => {
    it('runs an optional-task tool as a task: taskCreated, taskStatus..., then the result', async () => {
      const seen: string[] = [];
      let result: CallToolResult | undefined;
      for await (const message of sdk.client.experimental.tasks.callToolStream({
        name: 'wait',
        arguments: { seconds: 0.5 },
      })) {
        seen.push(message.type);
        if (message.type === 'result') result = message.result as CallToolResult;
        if (message.type === 'error') throw message.error;
      }
      expect(seen[0]).to.equal('taskCreated');
      expect(seen).to.include('taskStatus');
      expect(seen.at(-1)).to.equal('result');
      expect(result?.content).to.deep.equal([{ type: 'text', text: 'Waited 0.5s' }]);
    });

    it('runs a forbidden-as-task tool as a plain call', async () => {
      const messages = [];
      for await (const message of sdk.client.experimental.tasks.callToolStream({
        name: 'echo',
        arguments: { text: 'plain' },
      })) {
        messages.push(message);
      }
      expect(messages.map((message) => message.type)).to.deep.equal(['result']);
      const [only] = messages;
      expect(only?.type === 'result' ? only.result.content : undefined).to.deep.equal([
        { type: 'text', text: 'plain' },
      ]);
    });

    it('ends with an error message for a task that failed (the SDK drops the failed result itself)', async () => {
      const messages = [];
      for await (const message of sdk.client.experimental.tasks.callToolStream({
        name: 'crash',
        arguments: { message: 'boom' },
      })) {
        messages.push(message);
      }
      const last = messages.at(-1);
      expect(last?.type).to.equal('error');
      expect(last?.type === 'error' ? last.error.message : '').to.match(/failed/);
    });
  });

  describe('input_required with the SDK as the requestor (elicitation and sampling handlers)', () => {
    /** Runs `tool` as a task on a client set up by `setup`, and fetches its result with getTaskResult. */
    async function runAsTask(
      name: string,
      setup: (client: Client) => void,
      tool: string,
      args: Record<string, unknown>,
    ) {
      const host = await connectSdk(system.apiUrl, name, setup);
      try {
        const created = await host.client.request(
          { method: 'tools/call', params: { name: tool, arguments: args } },
          CreateTaskResultSchema,
          { task: { ttl: 60_000 } },
        );
        const taskId = created.task.taskId;
        const result: CallToolResult = await host.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
        const task = await host.client.experimental.tasks.getTask(taskId);
        return { taskId, result, status: task.status };
      } finally {
        await host.close();
      }
    }

    it('T-INPUT-2, T-INPUT-3, T-CLIENT-1: ask_user as a task: the handler sees the related-task _meta and its answer becomes the result', async () => {
      const seen: Record<string, unknown>[] = [];
      const run = await runAsTask(
        'sdk-elicitation',
        (client) =>
          client.setRequestHandler(ElicitRequestSchema, (request) => {
            seen.push(request.params);
            return Promise.resolve({ action: 'accept', content: { answer: 'forty-two' } });
          }),
        'ask_user',
        { question: 'The answer?' },
      );
      expect(run.result.content).to.deep.equal([{ type: 'text', text: 'forty-two' }]);
      expect(seen).to.have.length(1);
      expect(seen[0]?.['message']).to.equal('The answer?');
      expect(seen[0]?.['_meta']).to.deep.include({ [RELATED_TASK_META_KEY]: { taskId: run.taskId } });
    });

    it('T-INPUT-2: summarize as a task: the sampling handler answers and the task completes with its text', async () => {
      const seen: Record<string, unknown>[] = [];
      const run = await runAsTask(
        'sdk-sampling',
        (client) =>
          client.setRequestHandler(CreateMessageRequestSchema, (request) => {
            seen.push(request.params);
            return Promise.resolve({ role: 'assistant', model: 'stub', content: { type: 'text', text: 'Short.' } });
          }),
        'summarize',
        { text: 'A long story.' },
      );
      expect(run.result.content).to.deep.equal([{ type: 'text', text: 'Short.' }]);
      expect(seen[0]?.['_meta']).to.deep.include({ [RELATED_TASK_META_KEY]: { taskId: run.taskId } });
      expect(run.status).to.equal('completed');
    });
  });
});
