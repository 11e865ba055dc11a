// The gateway (docs/gateway.md): a worker is the MCP client of existing servers nobody here wrote — the reference
// server-everything over stdio and over Streamable HTTP, and server-filesystem with a prefix — and their tools run
// as our tasks behind one api, driven by the official SDK client: progress, input requests, cancellation, results,
// errors, timeouts and an upstream crash mid-call; and an upstream's own task followed by another worker process
// after ours was SIGKILLed or stopped.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type McpError,
  type CallToolResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { runCli } from '@mcp-tasks/cli';
import type { UpstreamStatus } from '@mcp-tasks/engine';
import { freePort } from '../../scripts/lib/ports.ts';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { modernPost, WITH_TASKS } from '../support/modern-client.ts';
import { startWorker } from '../support/in-process.ts';
import { repoRoot, startSystem, type ChildHandle, type System } from '../support/processes.ts';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.ts';
import { track } from '../support/resources.ts';
import { openTaskResultStream } from '../support/sse-client.ts';

const EVERYTHING = join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FILESYSTEM = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const WIRETAP = join(repoRoot, 'test/fixtures/upstream/wiretap.mjs');
const CHANGING = join(repoRoot, 'test/fixtures/upstream/changing-server.mjs');
const STATEFUL = join(repoRoot, 'test/fixtures/upstream/stateful-server.mjs');
const LEAKY = join(repoRoot, 'test/fixtures/upstream/leaky-server.mjs');
/** What the leaky upstream is configured with, and echoes when it refuses initialize (issue 37). */
const LEAKY_KEY = 'opensesame-4242-leaky';
const TTL = 120_000;
const ADMIN_TOKEN = 'gateway-admin-token-0123456789';

interface Connection {
  client: Client;
  close: () => Promise<void>;
}

async function connect(
  url: string,
  capabilities: Record<string, unknown>,
  setup: (client: Client) => void = () => undefined,
): Promise<Connection> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' }, { capabilities });
  setup(client);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const close = track('gateway sdk client', async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
  await client.connect(transport);
  return { client, close };
}

function text(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}

/** Calls `tool` as a task (ttl TTL) and gives the CreateTaskResult. */
function startTask(client: Client, tool: string, args: Record<string, unknown>) {
  return client.request(
    { method: 'tools/call', params: { name: tool, arguments: args, task: { ttl: TTL } } },
    CreateTaskResultSchema,
  );
}

/** Calls an upstream's echo tool (`tool` names it with its prefix) and checks the text it answers. */
async function expectEcho(client: Client, tool: string, message: string): Promise<void> {
  const result = await client.callTool({ name: tool, arguments: { message } });
  expect(text(result as CallToolResult)).to.equal(`Echo: ${message}`);
}

/** server-everything over Streamable HTTP on a free port, stopped after the suite. */
async function startHttpEverything(port?: number): Promise<{ url: string; stop: () => Promise<void> }> {
  port ??= await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = track(`server-everything http (pid ${child.pid})`, async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port/.test(output)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${String(code)}: ${output}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop };
}

describe('gateway: existing MCP servers behind the runner (server-everything stdio + HTTP, server-filesystem)', function () {
  this.timeout(120_000);
  let system: System;
  let http: { url: string; stop: () => Promise<void> };
  let dir: string;
  let files: string;
  let wiretap: { pids: string; log: string };

  /** Runs `body` with a fresh SDK client (no client capabilities) on the api, closing it whatever happens. */
  async function withClient(body: (client: Client) => Promise<void>): Promise<void> {
    const { client, close } = await connect(system.apiUrl, {});
    try {
      await body(client);
    } finally {
      await close();
    }
  }

  /** `mcpt overview` in this process, as operators run it. */
  async function cli(...args: string[]): Promise<string> {
    let out = '';
    let err = '';
    const code = await runCli(args, {
      out: (chunk) => (out += chunk),
      err: (chunk) => (err += chunk),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code, `${err}${out}`).to.equal(0);
    return out;
  }

  async function overview(): Promise<{ upstreams?: UpstreamStatus[] }> {
    return JSON.parse(await cli('overview', '--json')) as { upstreams?: UpstreamStatus[] };
  }

  /** The ids of the stdio server-everything processes started so far, oldest first. */
  const upstreamPids = () => readFileSync(wiretap.pids, 'utf8').split('\n').filter(Boolean).map(Number);
  /** The JSON-RPC messages the gateway sent to the stdio server-everything, each with the process it reached. */
  const sentWithPids = () =>
    readFileSync(wiretap.log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const tab = line.indexOf('\t');
        return { pid: Number(line.slice(0, tab)), message: JSON.parse(line.slice(tab + 1)) as Record<string, unknown> };
      });
  const sentUpstream = () => sentWithPids().map(({ message }) => message);

  /** The api's /readyz, with ADMIN_TOKEN as bearer when given. */
  async function readyz(token?: string): Promise<{
    status: string;
    upstreams: { upstream: string; state: string; reason?: string }[];
  }> {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    return (await (await fetch(new URL('/readyz', system.apiUrl), { headers })).json()) as Awaited<
      ReturnType<typeof readyz>
    >;
  }

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpt-gateway-')));
    files = join(dir, 'files');
    await import('node:fs').then((fs) => fs.mkdirSync(files));
    writeFileSync(join(files, 'hello.txt'), 'hello from the filesystem server\n');
    wiretap = { pids: join(dir, 'pids'), log: join(dir, 'wire.log') };
    writeFileSync(wiretap.pids, '');
    writeFileSync(wiretap.log, '');
    http = await startHttpEverything();
    const stdioEverything = {
      command: process.execPath,
      args: ['--import', WIRETAP, EVERYTHING, 'stdio'],
      env: { WIRETAP_PIDS: wiretap.pids, WIRETAP_LOG: wiretap.log },
    };
    const upstreams = [
      // One process, so that the test knows which one to kill; its calls are never sent again once started.
      { name: 'everything', ...stdioEverything, concurrency: 1, deny: ['get-env'], retrySafe: false },
      {
        name: 'everything-again',
        command: process.execPath,
        args: ['--import', WIRETAP, EVERYTHING, 'stdio'],
        env: { WIRETAP_PIDS: join(dir, 'again-pids') },
        prefix: 'again_',
        allow: ['trigger-long-running-operation'],
        retrySafe: true,
        concurrency: 1,
      },
      {
        name: 'everything-slow',
        command: process.execPath,
        args: ['--import', WIRETAP, EVERYTHING, 'stdio'],
        env: { WIRETAP_LOG: join(dir, 'slow-wire.log') },
        prefix: 'slow_',
        allow: ['trigger-long-running-operation'],
        timeoutMs: 1000,
      },
      {
        name: 'remote',
        url: http.url,
        headers: { 'X-Gateway-Test': '${GATEWAY_TEST_HEADER}' },
        prefix: 'http_',
        allow: ['echo', 'trigger-long-running-*'],
        taskSupport: { echo: 'forbidden' },
      },
      { name: 'files', command: process.execPath, args: [FILESYSTEM, files], prefix: 'fs_' },
      { name: 'changing', command: process.execPath, args: [CHANGING], prefix: 'chg_' },
      // Exits at once, every time: the worker keeps trying, further apart each time.
      { name: 'broken', command: process.execPath, args: ['-e', 'process.exit(3)'], prefix: 'broken_' },
      // Never answers initialize: it must hold up nothing else.
      {
        name: 'hanging',
        command: process.execPath,
        args: ['-e', 'process.stdin.resume()'],
        prefix: 'hanging_',
        connectTimeoutMs: 1000,
      },
      // Ours, stopped 300 ms after its last call.
      { name: 'lazy', command: process.execPath, args: [STATEFUL], prefix: 'lazy_', allow: ['remember'], idleMs: 300 },
      // Ours, misbehaving on purpose (issue 30): requests after its call, secrets on stderr.
      {
        name: 'hostile',
        command: process.execPath,
        args: [STATEFUL],
        prefix: 'hostile_',
        env: { PASSWORD: 'hunter2' },
      },
      // Serves its first process; later ones refuse initialize echoing their credential, padded (issue 37).
      {
        name: 'leaky',
        command: process.execPath,
        args: [LEAKY],
        prefix: 'leaky_',
        env: { LEAKY_KEY, LEAKY_MARKER: join(dir, 'leaky-started'), PAD: '5000' },
      },
    ];
    const config = join(dir, 'upstreams.json');
    writeFileSync(config, JSON.stringify({ upstreams }));
    system = await startSystem({
      workers: 0,
      env: {
        RESULT_RECHECK_MS: '1000',
        INPUT_RECHECK_MS: '1000',
        CATALOG_HEARTBEAT_MS: '500',
        ADMIN_TOKEN: ADMIN_TOKEN,
      },
    });
    await system.addWorker({ MCPT_UPSTREAMS: config, GATEWAY_TEST_HEADER: 'from-env' });
  });

  after(async () => {
    await system?.stop();
    await http?.stop();
  });

  it('lists the tools of every upstream with their prefixes, allow/deny lists and taskSupport (default optional)', async () => {
    await withClient(async (client) => {
      // Each upstream is reached on its own: all of them listed.
      const { tools } = await eventually(async () => {
        const listed = await client.listTools();
        const names = listed.tools.map((tool) => tool.name);
        const all = [
          'echo',
          'again_',
          'slow_',
          'http_echo',
          'fs_read_text_file',
          'chg_',
          'hostile_',
          'lazy_',
          'leaky_',
        ];
        return all.every((name) => names.some((listedName) => listedName.startsWith(name))) ? listed : undefined;
      }, 30_000);
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      for (const name of [
        'echo',
        'trigger-long-running-operation',
        'trigger-elicitation-request',
        'trigger-sampling-request',
      ]) {
        expect(byName.get(name)?.execution?.taskSupport, name).to.equal('optional');
      }
      expect(byName.has('get-env'), 'denied').to.equal(false);
      expect([...byName.keys()].filter((name) => name.startsWith('again_'))).to.deep.equal([
        'again_trigger-long-running-operation',
      ]);
      expect([...byName.keys()].filter((name) => name.startsWith('http_')).sort()).to.deep.equal([
        'http_echo',
        'http_trigger-long-running-operation',
      ]);
      expect(byName.get('http_echo')?.execution?.taskSupport).to.equal('forbidden');
      // The upstream's own schema and annotations, as it listed them.
      const longRunning = byName.get('trigger-long-running-operation');
      expect(longRunning?.inputSchema.properties).to.have.keys('duration', 'steps');
      expect(longRunning?.annotations?.readOnlyHint).to.equal(true);
      // A tool the upstream runs only as a task of its own is offered like the others (the gateway follows that task).
      expect(byName.get('simulate-research-query')?.execution?.taskSupport).to.equal('optional');
    });
  });

  it('runs a stdio tool as a plain call and gives its CallToolResult', async () => {
    await withClient(async (client) => {
      await expectEcho(client, 'echo', 'through the gateway');
    });
  });

  it('T-PROG-1: relays the long-running operation’s progress as the task’s progress (stdio and HTTP)', async () => {
    await withClient(async (client) => {
      for (const name of ['trigger-long-running-operation', 'http_trigger-long-running-operation']) {
        const progress: Progress[] = [];
        const result = await client.callTool({ name, arguments: { duration: 2, steps: 4 } }, CallToolResultSchema, {
          onprogress: (update) => progress.push(update),
          timeout: 60_000,
        });
        expect(text(result as CallToolResult), name).to.match(
          /Long running operation completed\. Duration: 2 seconds, Steps: 4/,
        );
        // The SDK client drops a progress notification that arrives together with the result (it forgets the
        // request's progress handler first), so the last step may be missing here; the ones seen are in order.
        expect(progress.length, name).to.be.greaterThan(0);
        expect(progress.every((update) => update.total === 4)).to.equal(true);
        expect(progress.map((update) => update.progress)).to.deep.equal([...progress.map((u) => u.progress)].sort());
      }
    });
  });

  it('T-PROG-1: every progress step of the upstream reaches the task’s stream before its result', async () => {
    const client = new McpTestClient(system.apiUrl);
    await client.initialize('2025-11-25', {});
    try {
      const created = await client.call('tools/call', {
        name: 'trigger-long-running-operation',
        arguments: { duration: 3, steps: 3 },
        task: { ttl: TTL },
        _meta: { progressToken: 'gateway-progress' },
      });
      const taskId = (created['task'] as { taskId: string }).taskId;
      const stream = await openTaskResultStream(client, taskId, 7);
      await stream.next((event) => event.message['id'] === 7, 60_000);
      const progress = stream.events
        .filter((event) => event.message['method'] === 'notifications/progress')
        .map((event) => event.message['params'] as Record<string, unknown>);
      expect(progress.at(-1)).to.deep.include({ progressToken: 'gateway-progress', progress: 3, total: 3 });
      await stream.close();
    } finally {
      await client.terminate();
    }
  });

  it('writes the upstream’s log messages during a call to the task’s log', async () => {
    const client = new McpTestClient(system.apiUrl);
    await client.initialize('2025-11-25', {});
    const toggle = async () => {
      const task = await client.createTask('toggle-simulated-logging', {}, { ttl: TTL });
      await eventually(async () => {
        const current = await client.call('tasks/get', { taskId: task['taskId'] });
        return current['status'] === 'completed' ? current : undefined;
      });
      return String(task['taskId']);
    };
    try {
      // Turning simulated logging on sends one message at once, during the call.
      const taskId = await toggle();
      const worker = system.workers[0];
      const logged = await eventually(() =>
        worker?.records().find((record) => record['message'] === 'upstream log' && record['taskId'] === taskId),
      );
      expect(logged).to.deep.include({ upstream: 'everything', tool: 'toggle-simulated-logging' });
      expect(logged['data'])
        .to.be.a('string')
        // One of the eight random messages is spelled 'Alert level-message' upstream.
        .and.match(/level.message/);
      await toggle(); // off again
    } finally {
      await client.terminate();
    }
  });

  it('relays the upstream’s elicitation/create through the input relay when our client declared elicitation', async () => {
    let asked: Record<string, unknown> | undefined;
    const { client, close } = await connect(system.apiUrl, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, (request) => {
        asked = request.params;
        return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
      }),
    );
    try {
      const result = await client.callTool(
        { name: 'trigger-elicitation-request', arguments: {} },
        CallToolResultSchema,
        {
          timeout: 60_000,
        },
      );
      expect(asked?.['message']).to.equal('Please provide inputs for the following fields:');
      expect(text(result as CallToolResult)).to.include('- Name: Ada Lovelace');
    } finally {
      await close();
    }
  });

  it('relays the upstream’s sampling/createMessage and returns the client’s completion to it', async () => {
    const { client, close } = await connect(system.apiUrl, { sampling: {} }, (c) =>
      c.setRequestHandler(CreateMessageRequestSchema, () => ({
        model: 'test-model',
        role: 'assistant',
        content: { type: 'text', text: 'a sampled answer' },
      })),
    );
    try {
      const result = await client.callTool(
        { name: 'trigger-sampling-request', arguments: { prompt: 'say something' } },
        CallToolResultSchema,
        { timeout: 60_000 },
      );
      expect(text(result as CallToolResult)).to.include('a sampled answer');
    } finally {
      await close();
    }
  });

  it('calls a tool the upstream runs as a task task-augmented, follows that task and relays its input_required', async () => {
    let asked: Record<string, unknown> | undefined;
    const { client, close } = await connect(system.apiUrl, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, (request) => {
        asked = request.params;
        return { action: 'accept', content: { interpretation: 'snake' } };
      }),
    );
    try {
      const result = await client.callTool(
        { name: 'simulate-research-query', arguments: { topic: 'python', ambiguous: true } },
        CallToolResultSchema,
        { timeout: 60_000 },
      );
      expect(String(asked?.['message'])).to.match(/could have multiple interpretations/);
      expect(text(result as CallToolResult)).to.include('# Research Report: python (snake)');
      const sent = sentUpstream();
      const call = sent.find(
        (message) =>
          message['method'] === 'tools/call' &&
          (message['params'] as { name?: string }).name === 'simulate-research-query',
      );
      expect((call?.['params'] as { task?: unknown }).task).to.have.property('ttl');
      expect(sent.some((message) => message['method'] === 'tasks/get')).to.equal(true);
      expect(sent.some((message) => message['method'] === 'tasks/result')).to.equal(true);
    } finally {
      await close();
    }
  });

  it('cancelling our task cancels the upstream’s task (tasks/cancel)', async () => {
    await withClient(async (client) => {
      const before = sentUpstream().length;
      const created = await client.request(
        {
          method: 'tools/call',
          params: { name: 'simulate-research-query', arguments: { topic: 'rivers' }, task: { ttl: TTL } },
        },
        CreateTaskResultSchema,
      );
      // The upstream's task exists once the worker polls it.
      const polled = await eventually(() =>
        sentUpstream()
          .slice(before)
          .find((message) => message['method'] === 'tasks/get'),
      );
      await client.experimental.tasks.cancelTask(created.task.taskId);
      const upstreamTaskId = (polled['params'] as { taskId: string }).taskId;
      await eventually(() =>
        sentUpstream()
          .slice(before)
          .find(
            (message) =>
              message['method'] === 'tasks/cancel' &&
              (message['params'] as { taskId?: string }).taskId === upstreamTaskId,
          ),
      );
      expect((await client.experimental.tasks.getTask(created.task.taskId)).status).to.equal('cancelled');
    });
  });

  it('does not ask a client that did not declare elicitation: the upstream gets an error and the task fails', async () => {
    await withClient(async (client) => {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'trigger-elicitation-request', arguments: {}, task: { ttl: TTL } } },
        CreateTaskResultSchema,
      );
      const taskId = created.task.taskId;
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(taskId);
        return current.status === 'failed' || current.status === 'completed' ? current : undefined;
      });
      expect(task.status).to.equal('failed');
      expect(task.statusMessage).to.match(/elicitation/);
    });
  });

  it('T-CANCEL-1: tasks/cancel sends notifications/cancelled for the upstream request', async () => {
    await withClient(async (client) => {
      const created = await startTask(client, 'trigger-long-running-operation', { duration: 60, steps: 60 });
      const call = await eventually(() =>
        sentUpstream().find(
          (message) =>
            message['method'] === 'tools/call' &&
            (message['params'] as { arguments?: { duration?: number } }).arguments?.duration === 60,
        ),
      );
      await client.experimental.tasks.cancelTask(created.task.taskId);
      // The SDK sends it for the request the call's AbortSignal stopped.
      await eventually(() =>
        sentUpstream().find(
          (message) =>
            message['method'] === 'notifications/cancelled' &&
            (message['params'] as { requestId?: unknown }).requestId === call['id'],
        ),
      );
      const task = await client.experimental.tasks.getTask(created.task.taskId);
      expect(task.status).to.equal('cancelled');
    });
  });

  it('an upstream killed mid-call fails the task in our words, without its stderr, and is not sent again (retrySafe false); the next call starts it again', async () => {
    await withClient(async (client) => {
      const before = sentUpstream().length;
      const created = await startTask(client, 'trigger-long-running-operation', { duration: 60, steps: 60 });
      const { pid } = await eventually(() =>
        sentWithPids()
          .slice(before)
          .find(({ message }) => message['method'] === 'tools/call'),
      );
      process.kill(pid, 'SIGKILL');
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      expect(task.statusMessage).to.equal(
        "upstream 'everything' was killed by SIGKILL during the call of 'trigger-long-running-operation'; it was " +
          "not sent again because 'trigger-long-running-operation' is not declared read-only or idempotent.",
      );
      const calls = sentUpstream()
        .slice(before)
        .filter((message) => message['method'] === 'tools/call');
      expect(calls, 'sent once').to.have.length(1);
      // Started on demand: the next call runs on a new process.
      await expectEcho(client, 'echo', 'after the crash');
      expect(upstreamPids()).to.have.length.above(1);
    });
  });

  it('a retrySafe upstream’s call cut off by a crash is run again and the task completes', async () => {
    const { client, close } = await connect(system.apiUrl, {});
    const pids = join(dir, 'again-pids');
    try {
      const created = await startTask(client, 'again_trigger-long-running-operation', { duration: 4, steps: 4 });
      await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'working' ? current : undefined;
      });
      const first = readFileSync(pids, 'utf8').split('\n').filter(Boolean).map(Number);
      process.kill(first.at(-1) as number, 'SIGKILL');
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'completed' || current.status === 'failed' ? current : undefined;
      }, 60_000);
      expect(task.status, task.statusMessage).to.equal('completed');
      const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(text(result)).to.match(/Long running operation completed/);
    } finally {
      await close();
    }
  });

  it('a call that outlives the upstream’s timeoutMs fails its task and is cancelled upstream', async () => {
    await withClient(async (client) => {
      const created = await startTask(client, 'slow_trigger-long-running-operation', { duration: 10, steps: 2 });
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      expect(task.statusMessage).to.match(/did not answer the call of 'trigger-long-running-operation' within 1000 ms/);
      const sent = () =>
        readFileSync(join(dir, 'slow-wire.log'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line.slice(line.indexOf('\t') + 1)) as Record<string, unknown>);
      const call = sent().find((message) => message['method'] === 'tools/call');
      const cancelled = await eventually(() =>
        sent().find((message) => message['method'] === 'notifications/cancelled'),
      );
      expect((cancelled['params'] as { requestId?: unknown }).requestId).to.equal(call?.['id']);
    });
  });

  it('runs server-filesystem’s tools under their prefix; an upstream isError result stays an isError result', async () => {
    await withClient(async (client) => {
      const read = await client.callTool({ name: 'fs_read_text_file', arguments: { path: join(files, 'hello.txt') } });
      expect(text(read as CallToolResult)).to.include('hello from the filesystem server');
      const created = await client.request(
        {
          method: 'tools/call',
          params: { name: 'fs_read_text_file', arguments: { path: '/etc/hostname' }, task: { ttl: TTL } },
        },
        CreateTaskResultSchema,
      );
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      expect(task.statusMessage).to.match(/outside allowed directories|Access denied/i);
      const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(result.isError).to.equal(true);
    });
  });

  it('runs a Streamable HTTP upstream’s tool', async () => {
    await withClient(async (client) => {
      await expectEcho(client, 'http_echo', 'over http');
    });
  });

  it('an HTTP upstream that restarted between calls: the call its old session refused is sent again on a new session and succeeds', async () => {
    await withClient(async (client) => {
      await expectEcho(client, 'http_echo', 'before the restart');
      await http.stop();
      http = await startHttpEverything(Number(new URL(http.url).port));
      // The worker's connection names a session the new server does not know (HTTP 404): never started, so sent
      // again at once on a new session, whatever the tool's annotations say.
      await expectEcho(client, 'http_echo', 'after the restart');
      const resent = system.workers[0]
        ?.records()
        .find(
          (record) =>
            record['message'] === 'upstream call sent again on a fresh connection' && record['upstream'] === 'remote',
        );
      expect(resent).to.deep.include({ reachedUpstream: false });
      expect(String(resent?.['how'])).to.match(/refused the request with HTTP 4\d\d/);
    });
  });

  it('follows notifications/tools/list_changed: a tool the upstream adds is listed and runs', async () => {
    await withClient(async (client) => {
      const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
      expect(await names())
        .to.include('chg_add_tool')
        .and.not.include('chg_added_tool');
      await client.callTool({ name: 'chg_add_tool', arguments: {} });
      await eventually(async () => ((await names()).includes('chg_added_tool') ? true : undefined), 30_000);
      const result = await client.callTool({ name: 'chg_added_tool', arguments: {} });
      expect(text(result as CallToolResult)).to.equal('the added tool ran');
    });
  });

  it('an upstream JSON-RPC error is the task’s error, code, message and data as the upstream sent them', async () => {
    await withClient(async (client) => {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'chg_fail_jsonrpc', arguments: {}, task: { ttl: TTL } } },
        CreateTaskResultSchema,
      );
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      // The SDK's server puts its own 'MCP error <code>: ' in front of the message on the wire; kept as sent.
      expect(task.statusMessage).to.equal('MCP error -32042: the upstream refuses');
      const error = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).then(
        () => undefined,
        (failure: unknown) => failure as McpError,
      );
      expect(error?.code).to.equal(-32042);
      expect(error?.message).to.equal('MCP error -32042: MCP error -32042: the upstream refuses');
      expect(error?.data).to.deep.include({ reason: 'test' });
    });
  });

  it('an upstream that keeps dying is started again with backoff (0.5 s, doubling)', async () => {
    const worker = system.workers[0];
    const restarts = await eventually(() => {
      const found = worker
        ?.records()
        .filter((record) => record['message'] === 'restarting upstream connection' && record['upstream'] === 'broken');
      return found && found.length >= 4 ? found : undefined;
    }, 60_000);
    expect(restarts.slice(0, 4).map((record) => record['inMs'])).to.deep.equal([500, 1000, 2000, 4000]);
    const unreachable = worker?.records().find((record) => record['message'] === 'upstream not reachable; retrying');
    expect(unreachable).to.deep.include({ upstream: 'broken' });
  });

  it('an HTTP upstream killed mid-call: the call is cut, its tools stay listed, calls say it is unavailable, and it serves once back', async () => {
    await withClient(async (client) => {
      await eventually(async () =>
        (await client.listTools()).tools.some((tool) => tool.name === 'http_trigger-long-running-operation')
          ? true
          : undefined,
      );
      const created = await startTask(client, 'http_trigger-long-running-operation', { duration: 60, steps: 60 });
      await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'working' ? current : undefined;
      });
      const port = Number(new URL(http.url).port);
      await http.stop();
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      // Read-only by its annotations: sent again once, which found the upstream gone.
      expect(task.statusMessage).to.match(
        /^upstream 'remote' is unavailable: http:\/\/127\.0\.0\.1:\d+ could not be reached \(ECONNREFUSED\)\.$/,
      );
      const cut = system.workers[0]
        ?.records()
        .find(
          (record) =>
            record['message'] === 'upstream call sent again on a fresh connection' &&
            record['upstream'] === 'remote' &&
            record['reachedUpstream'] === true,
        );
      // Whichever of the response stream and the connection reports it first.
      expect(String(cut?.['how'])).to.match(/^(dropped the response stream of the call|lost the connection \(\w+\))$/);
      expect((await client.listTools()).tools.map((tool) => tool.name)).to.include('http_echo');
      const down = await eventually(async () =>
        (await overview()).upstreams?.find(
          (upstream) => upstream.upstream === 'remote' && upstream.state === 'unavailable',
        ),
      );
      expect(down.reason).to.match(/could not be reached \(ECONNREFUSED\)/);
      const refused = await client.callTool({ name: 'http_echo', arguments: { message: 'x' } }).catch((e: Error) => e);
      expect(String((refused as Error).message)).to.match(/upstream 'remote' is unavailable/);
      http = await startHttpEverything(port);
      await eventually(
        () =>
          expectEcho(client, 'http_echo', 'back').then(
            () => true,
            () => undefined,
          ),
        15_000,
      );
    });
  });

  it('a hanging upstream beside healthy ones: the others serve, it is retried, and operators see why (overview, /readyz)', async () => {
    const hanging = await eventually(async () =>
      (await overview()).upstreams?.find((upstream) => upstream.upstream === 'hanging' && upstream.reason),
    );
    expect(hanging).to.deep.include({ transport: 'stdio', affinity: 'stateless', state: 'unavailable', tools: 0 });
    expect(hanging.reason).to.equal('it did not answer initialize within 1000 ms (connectTimeoutMs)');
    const ready = await readyz(ADMIN_TOKEN);
    expect(ready.status, 'an upstream does not make the api unready').to.equal('ready');
    expect(ready.upstreams.find((upstream) => upstream.upstream === 'hanging')).to.deep.include({
      state: 'unavailable',
      reason: hanging.reason,
    });
    expect(ready.upstreams.find((upstream) => upstream.upstream === 'files')?.state).to.be.oneOf(['ready', 'idle']);
    const text = await cli('overview');
    expect(text).to.match(/hanging \(stdio, stateless\)\s+worker-\S+\s+unavailable/);
    // The dashboard renders the overview's upstreams.
    const admin = (await (
      await fetch(new URL('/admin/api/overview', system.apiUrl), {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json()) as { upstreams?: UpstreamStatus[] };
    expect(admin.upstreams?.find((upstream) => upstream.upstream === 'hanging')?.state).to.equal('unavailable');
  });

  it('children are started when a call needs one and stopped after idleMs without calls', async () => {
    const lazy = async () => (await overview()).upstreams?.find((upstream) => upstream.upstream === 'lazy');
    // Listed, then stopped: no process until a call comes.
    await eventually(async () => ((await lazy())?.state === 'idle' ? true : undefined));
    expect((await lazy())?.connections).to.equal(0);
    await withClient(async (client) => {
      const remember = async (note: string) =>
        JSON.parse(text((await client.callTool({ name: 'lazy_remember', arguments: { note } })) as CallToolResult)) as {
          pid: number;
          notes: string[];
        };
      const first = await remember('a');
      await eventually(async () => ((await lazy())?.state === 'idle' ? true : undefined));
      const second = await remember('b');
      // A new process, with its own (empty) state: the first one was stopped.
      expect(second.pid).not.to.equal(first.pid);
      expect(second.notes).to.deep.equal(['b']);
    });
  });

  it('issue 30: an upstream’s request after its call ended never reaches another principal’s call; it is refused', async () => {
    let bobAsked = 0;
    const bob = await connect(system.apiUrl, { elicitation: { form: {} } }, (c) =>
      c.setRequestHandler(ElicitRequestSchema, () => {
        bobAsked++;
        return { action: 'decline' };
      }),
    );
    try {
      await withClient(async (alice) => {
        // Alice's call answers at once and asks 300 ms later; Bob's call is in flight then.
        await alice.callTool({ name: 'hostile_late_elicit', arguments: { delayMs: 300 } });
        await bob.client.callTool({ name: 'hostile_wait', arguments: { ms: 1200 } });
      });
      const worker = system.workers[0] as ChildHandle;
      const refused = await eventually(() =>
        worker
          .records()
          .find((record) => record['message'] === 'upstream request refused' && record['upstream'] === 'hostile'),
      );
      expect(refused).to.deep.include({ method: 'elicitation/create' });
      await eventually(() =>
        worker.records().find((record) => String(record['line']).startsWith('late elicitation refused')),
      );
      expect(bobAsked).to.equal(0);
    } finally {
      await bob.close();
    }
  });

  it('issue 30: an upstream that prints secrets on stderr and exits: the client reads our words, the worker’s log has them masked', async () => {
    await withClient(async (client) => {
      const created = await startTask(client, 'hostile_leak_and_exit', {});
      const task = await eventually(async () => {
        const current = await client.experimental.tasks.getTask(created.task.taskId);
        return current.status === 'failed' ? current : undefined;
      });
      expect(task.statusMessage).to.equal(
        "upstream 'hostile' exited with code 1 during the call of 'leak_and_exit'; it was not sent again because " +
          "'leak_and_exit' is not declared read-only or idempotent.",
      );
      const error = await client.experimental.tasks
        .getTaskResult(created.task.taskId, CallToolResultSchema)
        .catch((failure: Error) => failure);
      expect(JSON.stringify(error)).not.to.match(/hunter2|s3cr3t/);
      const worker = system.workers[0] as ChildHandle;
      await eventually(() => worker.logs.find((line) => line.includes('password=***')));
      expect(worker.logs.join('\n')).not.to.match(/hunter2|s3cr3t/);
    });
  });

  it('issue 30: the progress token sent upstream is opaque: it does not contain the task id', async () => {
    await withClient(async (client) => {
      const created = await startTask(client, 'hostile_report_progress', {});
      const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      const { progressToken } = JSON.parse(text(result)) as { progressToken: unknown };
      expect(progressToken).to.be.a('string');
      expect(String(progressToken)).not.to.include(created.task.taskId);
      expect(String(progressToken)).not.to.include(created.task.taskId.slice(0, 8));
    });
  });

  describe('cost and edges (issue 37)', () => {
    it('cost: an upstream’s 4 MB progress message is stored cut to 1024 bytes (maxTextBytes), as the 2026-07-28 tasks/get serves it', async () => {
      const bytes = 4 * 1024 * 1024;
      const created = await modernPost(
        system.apiUrl,
        'tools/call',
        // Held long enough for a loaded machine: the message is seen only between its arrival and the task's end.
        { name: 'hostile_big_progress', arguments: { bytes, holdMs: 10_000 } },
        { capabilities: WITH_TASKS },
      );
      const taskId = created.body.result?.['taskId'];
      if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
      const message = await eventually(async () => {
        const got = await modernPost(system.apiUrl, 'tasks/get', { taskId }, { capabilities: WITH_TASKS });
        const statusMessage = got.body.result?.['statusMessage'];
        return typeof statusMessage === 'string' && statusMessage.startsWith('xxx') ? statusMessage : undefined;
      }, 30_000);
      expect(Buffer.byteLength(message, 'utf8')).to.equal(1024);
      expect(message.endsWith('…')).to.equal(true);
      // What Redis keeps of the task: the record with its status history, a few KB however large the message was.
      const record = `${system.prefix}:task:${taskId}`;
      expect(await system.redis.hstrlen(record, 'statusMessage')).to.equal(1024);
      expect(Number(await system.redis.memory('USAGE', record))).to.be.below(16 * 1024);
    });

    it('cost: an upstream’s elicitation/create of 1 MB is refused to it (maxRequestBytes), never relayed to the client', async () => {
      let asked = 0;
      const { client, close } = await connect(system.apiUrl, { elicitation: { form: {} } }, (c) =>
        c.setRequestHandler(ElicitRequestSchema, () => {
          asked++;
          return { action: 'decline' };
        }),
      );
      try {
        const result = await client.callTool({ name: 'hostile_big_elicit', arguments: { bytes: 1024 * 1024 } });
        expect(text(result as CallToolResult)).to.match(
          /^refused: .*elicitation\/create takes \d+ bytes of JSON, more than the 65536 relayed \(maxRequestBytes\); it was not relayed/,
        );
        expect(asked).to.equal(0);
        // A small one is relayed as before.
        const small = await client.callTool({ name: 'hostile_big_elicit', arguments: { bytes: 10 } });
        expect(text(small as CallToolResult)).to.include('decline');
        expect(asked).to.equal(1);
      } finally {
        await close();
      }
    });

    it('edges: a secret an upstream echoes when it refuses initialize is masked, and the reason cut, for clients and logs; /readyz shows the state, the reason only with ADMIN_TOKEN', async () => {
      await withClient(async (client) => {
        // The first process serves and dies in the call; the next ones refuse initialize, echoing LEAKY_KEY.
        await client.callTool({ name: 'leaky_crash', arguments: {} }).catch(() => undefined);
        const refused = await eventually(async () => {
          const error = await client.callTool({ name: 'leaky_crash', arguments: {} }).then(
            () => undefined,
            (failure: McpError) => failure,
          );
          return error && /is unavailable/.test(error.message) ? error : undefined;
        });
        expect(refused.message).to.include("upstream 'leaky' is unavailable: cannot log in as *** ppp");
        expect(refused.message).not.to.include(LEAKY_KEY);
        expect(Buffer.byteLength(refused.message)).to.be.below(1200);
      });
      const open = await readyz();
      const leaky = open.upstreams.find((upstream) => upstream.upstream === 'leaky');
      expect(leaky?.state).to.equal('unavailable');
      expect(open.upstreams.every((upstream) => upstream.reason === undefined)).to.equal(true);
      expect(JSON.stringify(open)).not.to.include(LEAKY_KEY);
      const withToken = await readyz(ADMIN_TOKEN);
      const reason = withToken.upstreams.find((upstream) => upstream.upstream === 'leaky')?.reason ?? '';
      expect(reason).to.match(/^cannot log in as \*\*\* p+…$/);
      expect(Buffer.byteLength(reason)).to.equal(1024);
      expect((await readyz('not-the-admin-token')).upstreams.every((upstream) => !upstream.reason)).to.equal(true);
      const worker = system.workers[0] as ChildHandle;
      expect(worker.logs.join('\n')).not.to.include(LEAKY_KEY);
      expect(JSON.stringify(await overview())).not.to.include(LEAKY_KEY);
    });
  });

  it('a second worker with the same upstreams publishes the same definitions (no catalog conflict)', async () => {
    const config = join(dir, 'upstreams.json');
    // In the test's process: what is tested is what it publishes, not its process (its upstreams are processes).
    const worker = await startWorker({ ...system.env, MCPT_UPSTREAMS: config, GATEWAY_TEST_HEADER: 'from-env' });
    try {
      // Each upstream is listed on its own, after the worker is ready.
      await eventually(() => {
        const listed = worker.records().filter((record) => record['message'] === 'upstream tools listed');
        return listed.length >= 8 ? true : undefined;
      }, 30_000);
      await eventually(() =>
        worker.records().find((record) => record['message'] === 'served tools changed') ? true : undefined,
      );
      expect(worker.logs.join('\n')).not.to.match(/withheld/);
    } finally {
      await worker.stop();
    }
  });
});

describe('gateway: another worker resumes the upstream’s task after ours stopped (server-everything over Streamable HTTP)', function () {
  this.timeout(180_000);
  let system: System;
  let http: { url: string; stop: () => Promise<void> };
  let proxy: RecordingProxy;
  let config: string;
  const TOOL = 'http_simulate-research-query';

  before(async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpt-gateway-resume-')));
    http = await startHttpEverything();
    // The proxy records what the workers send, across restarts of the server behind it.
    proxy = await startRecordingProxy(http.url);
    config = join(dir, 'upstreams.json');
    // Not retrySafe: a re-run would fail the task, so a completed task proves the upstream task was followed.
    const upstreams = [
      {
        name: 'remote',
        url: proxy.url,
        headers: { 'X-Gateway-Test': '${GATEWAY_TEST_HEADER}' },
        prefix: 'http_',
        allow: ['simulate-research-query'],
        concurrency: 1,
      },
    ];
    writeFileSync(config, JSON.stringify({ upstreams }));
    // Short job locks: a killed worker's job is recovered within about two seconds.
    system = await startSystem({
      workers: 0,
      env: {
        WORKER_LOCK_DURATION_MS: '1000',
        WORKER_STALLED_INTERVAL_MS: '1000',
        CATALOG_HEARTBEAT_MS: '500',
        RESULT_RECHECK_MS: '1000',
      },
    });
  });

  after(async () => {
    await system?.stop();
    await proxy?.stop();
    await http?.stop();
  });

  const workerEnv = () => ({ MCPT_UPSTREAMS: config, GATEWAY_TEST_HEADER: 'from-env' });

  /** The research tool's calls (tools/call) that reached the upstream for `topic`. */
  const calls = (topic: string) =>
    proxy.sent.filter(
      ({ message }) =>
        message['method'] === 'tools/call' &&
        (message['params'] as { arguments?: { topic?: string } }).arguments?.topic === topic,
    );

  /**
   * Starts a worker, creates a task of the research tool on it and waits until the worker stored the upstream's task
   * on the job; then stops that worker with `signal`.
   */
  async function startThenStop(
    client: Client,
    topic: string,
    signal: NodeJS.Signals,
    env: Record<string, string> = {},
  ) {
    const first = await system.addWorker({ ...workerEnv(), ...env });
    await eventually(async () =>
      (await client.listTools()).tools.some((tool) => tool.name === TOOL) ? true : undefined,
    );
    const created = await startTask(client, TOOL, { topic });
    const taskId = created.task.taskId;
    const stored = await eventually(() =>
      first
        .records()
        .find((record) => record['message'] === 'upstream task stored on the job' && record['taskId'] === taskId),
    );
    await first.stop(signal);
    const call = calls(topic)[0];
    return { first, taskId, upstreamTaskId: String(stored['upstreamTaskId']), sessionId: call?.sessionId };
  }

  async function settled(client: Client, taskId: string) {
    return eventually(async () => {
      const current = await client.experimental.tasks.getTask(taskId);
      return current.status === 'completed' || current.status === 'failed' ? current : undefined;
    }, 90_000);
  }

  it('concurrency 1: the next call reaches the upstream once the first one’s answer ended; every request carries the header from the environment', async () => {
    await withApiClient(system.apiUrl, async (client) => {
      const worker = await system.addWorker(workerEnv());
      try {
        await eventually(async () =>
          (await client.listTools()).tools.some((tool) => tool.name === TOOL) ? true : undefined,
        );
        const created = await Promise.all(['seas', 'ponds'].map((topic) => startTask(client, TOOL, { topic })));
        for (const { task } of created) {
          expect((await settled(client, task.taskId)).status).to.equal('completed');
        }
        const [first, second] = [...calls('seas'), ...calls('ponds')].sort((a, b) => a.at - b.at);
        const firstTopic = (first?.message['params'] as { arguments: { topic: string } }).arguments.topic;
        const firstTask = created[firstTopic === 'seas' ? 0 : 1]?.task.taskId;
        const upstreamTaskId = worker
          .records()
          .find((record) => record['message'] === 'upstream task created' && record['taskId'] === firstTask)?.[
          'upstreamTaskId'
        ];
        const result = proxy.sent.find(
          ({ message }) =>
            message['method'] === 'tasks/result' &&
            (message['params'] as { taskId?: string }).taskId === upstreamTaskId,
        );
        expect(result?.answeredAt).to.be.a('number');
        expect(second?.at).to.be.greaterThan(result?.answeredAt as number);
        const headers = new Set(proxy.sent.map(({ headers }) => headers['x-gateway-test']));
        expect([...headers]).to.deep.equal(['from-env']);
      } finally {
        await worker.stop();
      }
    });
  });

  it('a worker SIGKILLed mid upstream task: another worker follows that task on its session, and the tool runs once', async () => {
    await withApiClient(system.apiUrl, async (client) => {
      const { taskId, upstreamTaskId, sessionId } = await startThenStop(client, 'rivers', 'SIGKILL');
      const second = await system.addWorker(workerEnv());
      try {
        const task = await settled(client, taskId);
        expect(task.status, task.statusMessage).to.equal('completed');
        const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
        expect(text(result)).to.include('# Research Report: rivers');
        // The upstream ran the tool once: the second worker asked for the first one's task instead of calling again.
        expect(calls('rivers')).to.have.length(1);
        const resumed = second.records().find((record) => record['message'] === 'upstream task resumed');
        expect(resumed).to.deep.include({ taskId, upstreamTaskId, session: 'rejoined' });
        const followed = proxy.sent.filter(
          ({ message }) =>
            (message['method'] === 'tasks/get' || message['method'] === 'tasks/result') &&
            (message['params'] as { taskId?: string }).taskId === upstreamTaskId,
        );
        expect(followed.some(({ message }) => message['method'] === 'tasks/result')).to.equal(true);
        // On the session that created it, which server-everything keeps its tasks in, with the configured headers.
        expect(followed.every((sent) => sent.sessionId === sessionId)).to.equal(true);
        expect(followed.every((sent) => sent.headers['x-gateway-test'] === 'from-env')).to.equal(true);
      } finally {
        await second.stop();
      }
    });
  });

  it('a worker stopped (SIGTERM) mid upstream task hands the job back without cancelling that task; the next worker follows it', async () => {
    await withApiClient(system.apiUrl, async (client) => {
      // A short grace: the research (four seconds) is still running when the worker gives its jobs back.
      const { first, taskId, upstreamTaskId } = await startThenStop(client, 'lakes', 'SIGTERM', {
        WORKER_SHUTDOWN_GRACE_MS: '200',
      });
      expect(first.records().some((record) => record['message'] === 'handing the task back on shutdown')).to.equal(
        true,
      );
      const second = await system.addWorker(workerEnv());
      try {
        const task = await settled(client, taskId);
        expect(task.status, task.statusMessage).to.equal('completed');
        const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
        expect(text(result)).to.include('# Research Report: lakes');
        expect(calls('lakes')).to.have.length(1);
        const cancels = proxy.sent.filter(({ message }) => message['method'] === 'tasks/cancel');
        expect(cancels.map(({ message }) => (message['params'] as { taskId?: string }).taskId)).not.to.include(
          upstreamTaskId,
        );
      } finally {
        await second.stop();
      }
    });
  });

  it('when the upstream no longer knows its task (it restarted), the task fails clearly and the tool is not run again (not retrySafe)', async () => {
    await withApiClient(system.apiUrl, async (client) => {
      const { taskId, upstreamTaskId } = await startThenStop(client, 'glaciers', 'SIGKILL');
      // The server restarts on the same port: the first worker's session and its task are gone.
      await http.stop();
      http = await startHttpEverything(Number(new URL(http.url).port));
      const second = await system.addWorker(workerEnv());
      try {
        const task = await settled(client, taskId);
        expect(task.status).to.equal('failed');
        expect(task.statusMessage).to.equal(
          `The worker that called 'simulate-research-query' on upstream 'remote' stopped, and the upstream no longer knows its task ${upstreamTaskId}; it was not run again because 'simulate-research-query' is not declared read-only or idempotent.`,
        );
        expect(calls('glaciers')).to.have.length(1);
        // The rejoined session was refused, and a new session's tasks/get answered that the task is unknown.
        const unknown = second.records().find((record) => record['message'] === 'upstream task unknown upstream');
        expect(unknown).to.deep.include({ taskId, upstreamTaskId, session: 'new' });
      } finally {
        await second.stop();
      }
    });
  });
});

/** Runs `body` with a fresh SDK client (no client capabilities) on `apiUrl`, closing it whatever happens. */
async function withApiClient(apiUrl: string, body: (client: Client) => Promise<void>): Promise<void> {
  const { client, close } = await connect(apiUrl, {});
  try {
    await body(client);
  } finally {
    await close();
  }
}
