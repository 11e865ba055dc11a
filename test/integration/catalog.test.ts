// The tool catalog (docs/catalog.md): workers publish the tools they serve, the api lists the union of the live
// ones, validates arguments against the published JSON Schema and routes each call to a worker that has the tool.
import { expect } from 'chai';
import { runCli } from '@mcp-tasks/cli';
import { expectRpcError, eventually, McpTestClient, sleep } from '../support/mcp-client.ts';
import { startSystem as startInProcess, type System as InProcessSystem } from '../support/in-process.ts';
import { spawnWorker, startSystem, type ChildHandle, type System } from '../support/processes.ts';
import { modernResult } from '../support/modern-client.ts';
import { SseConnection } from '../support/sse-client.ts';

const ALPHA = './test/fixtures/catalog/alpha.ts';
const BETA = './test/fixtures/catalog/beta.ts';
const GAMMA = './test/fixtures/catalog/gamma.ts';

function names(listing: Record<string, unknown>): string[] {
  return (listing['tools'] as { name: string }[]).map((tool) => tool.name).sort();
}

function sessionStream(client: McpTestClient): Promise<SseConnection> {
  return SseConnection.open(client.url, {
    method: 'GET',
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': String(client.sessionId),
      'mcp-protocol-version': '2025-11-25',
    },
  });
}

const isListChanged = (event: { message: Record<string, unknown> }) =>
  event.message['method'] === 'notifications/tools/list_changed';

describe('the tool catalog (workers publish, the api lists and routes)', function () {
  this.timeout(90_000);
  let system: System;
  let client: McpTestClient;
  let alphaWorker: ChildHandle;
  let betaWorker: ChildHandle;

  before(async () => {
    system = await startSystem({
      workers: 0,
      env: { CATALOG_HEARTBEAT_MS: '200', CATALOG_GRACE_MS: '3000', RESULT_RECHECK_MS: '1000' },
    });
    alphaWorker = await system.addWorker({ MCPT_TOOLS: ALPHA });
    betaWorker = await system.addWorker({ MCPT_TOOLS: BETA });
    client = await McpTestClient.connect(system.apiUrl);
  });
  after(async () => {
    await system?.stop();
  });

  it('declares tools.listChanged and lists the union of the live workers’ tools, with their schemas', async () => {
    const init = await new McpTestClient(system.apiUrl).initialize('2025-11-25');
    expect((init['capabilities'] as Record<string, unknown>)['tools']).to.deep.equal({ listChanged: true });
    await eventually(async () => (names(await client.call('tools/list')).length === 2 ? true : undefined));
    const listing = await client.call('tools/list');
    expect(names(listing)).to.deep.equal(['alpha', 'beta']);
    const alpha = (listing['tools'] as Record<string, unknown>[]).find((tool) => tool['name'] === 'alpha');
    expect(alpha).to.deep.include({
      description: 'Doubles n and says which process did it',
      annotations: { readOnlyHint: true },
      execution: { taskSupport: 'optional' },
    });
    expect(alpha?.['inputSchema']).to.deep.include({ type: 'object', required: ['n'] });
    expect(alpha?.['outputSchema']).to.deep.include({ type: 'object' });
  });

  it('two workers with different tools behind one api: each job reaches a worker that has its tool', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.createTask(i % 2 === 0 ? 'alpha' : 'beta', i % 2 === 0 ? { n: i } : {}),
      ),
    );
    for (const [i, task] of tasks.entries()) {
      const result = await client.call('tasks/result', { taskId: task['taskId'] });
      expect(result['isError'], JSON.stringify(result)).to.not.equal(true);
      if (i % 2 === 0) {
        expect(result['structuredContent']).to.deep.equal({ doubled: i * 2, pid: alphaWorker.process.pid });
        expect(result['content']).to.deep.equal([{ type: 'text', text: `alpha: ${i * 2}` }]); // the default applied
      } else {
        expect(result['content']).to.deep.equal([{ type: 'text', text: String(betaWorker.process.pid) }]);
      }
    }
    const plain = await client.call('tools/call', { name: 'beta', arguments: {} });
    expect(plain['content']).to.deep.equal([{ type: 'text', text: String(betaWorker.process.pid) }]);
  });

  it('T-ERR-2: arguments are validated against the published JSON Schema at call time (-32602 naming the field)', async () => {
    await expectRpcError(
      client.call('tools/call', { name: 'alpha', arguments: { n: 'two' }, task: {} }),
      -32602,
      /Invalid arguments for tool 'alpha': n: must be integer/,
    );
    await expectRpcError(
      client.call('tools/call', { name: 'alpha', arguments: { n: 5000 } }),
      -32602,
      /Invalid arguments for tool 'alpha': n: must be <= 1000/,
    );
    await expectRpcError(
      client.call('tools/call', { name: 'alpha', arguments: {}, task: {} }),
      -32602,
      /Invalid arguments for tool 'alpha': must have required property 'n'/,
    );
    await expectRpcError(client.call('tools/call', { name: 'wait', arguments: {} }), -32602, /Unknown tool: 'wait'/);
  });

  it('refuses at start-up a worker whose definition of a live tool differs; an equal one is welcome', async () => {
    let refusal: Error | undefined;
    try {
      await spawnWorker({ ...system.env, MCPT_TOOLS: './test/fixtures/catalog/alpha-changed.ts' });
    } catch (error) {
      refusal = error as Error;
    }
    expect(refusal?.message).to.match(/exited with 1 before it was ready/);
    expect(refusal?.message).to.match(/Tool 'alpha' is already served with a different definition/);
    const twin = await spawnWorker({ ...system.env, MCPT_TOOLS: ALPHA });
    await twin.stop();
  });

  it('reports a module that exports no tools, or does not load, by its MCPT_TOOLS entry', async () => {
    for (const [entry, message] of [
      ['./test/fixtures/catalog/none.ts', /MCPT_TOOLS: '.\/test\/fixtures\/catalog\/none.ts' exports no tools/],
      ['./test/fixtures/catalog/missing.js', /MCPT_TOOLS: could not load '.\/test\/fixtures\/catalog\/missing.js'/],
      ['no-such-tools-package', /MCPT_TOOLS: could not load 'no-such-tools-package'/],
    ] as const) {
      const refused = await spawnWorker({ ...system.env, MCPT_TOOLS: entry }).then(
        async (worker) => {
          await worker.stop();
          return undefined;
        },
        (error: Error) => error.message,
      );
      expect(refused, entry).to.match(message);
    }
  });

  it('sends notifications/tools/list_changed on the GET stream when a worker with a new tool arrives', async () => {
    const stream = await sessionStream(client);
    try {
      await sleep(200); // the stream is registered with its replica
      const gamma = await system.addWorker({ MCPT_TOOLS: GAMMA });
      await stream.next(isListChanged, 10_000);
      expect(names(await client.call('tools/list'))).to.deep.equal(['alpha', 'beta', 'gamma']);
      const result = await client.call('tools/call', { name: 'gamma', arguments: {} });
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'gamma' }]);

      // Its worker dies (a clean stop would withdraw the entry at once): gamma stays listed for the grace period,
      // and a task of it waits in the queue.
      const seen = stream.events.length;
      await gamma.stop('SIGKILL');
      await sleep(1000);
      expect(names(await client.call('tools/list'))).to.include('gamma');
      const waiting = await client.createTask('gamma', {});
      await sleep(500);
      expect((await client.call('tasks/get', { taskId: waiting['taskId'] }))['status']).to.equal('working');

      // After the grace period it leaves the list (and the clients hear of it); the queued task runs on a new worker.
      await stream.next(isListChanged, 10_000, seen);
      expect(names(await client.call('tools/list'))).to.deep.equal(['alpha', 'beta']);
      await system.addWorker({ MCPT_TOOLS: GAMMA });
      const result2 = await client.call('tasks/result', { taskId: waiting['taskId'] });
      expect(result2['content']).to.deep.equal([{ type: 'text', text: 'gamma' }]);
    } finally {
      await stream.close();
    }
  });
});

// The catalog's behaviour from here on needs no process of its own (docs/tests.md, "The two tiers"): api and workers
// run in the test's process; a worker refused at start-up stays a process, whose exit is the refusal.
describe('the edit-restart loop: a cleanly stopped worker withdraws its catalog entries at once (issue 31)', function () {
  this.timeout(90_000);
  const DELTA = './test/fixtures/catalog/delta.ts';
  const DELTA_CHANGED = './test/fixtures/catalog/delta-changed.ts';
  let system: InProcessSystem;

  // The default grace period (60 s): a worker refused by its predecessor's entry would fail, not wait.
  before(async () => {
    system = await startInProcess({ workers: 0, env: { CATALOG_HEARTBEAT_MS: '200' } });
  });
  after(async () => {
    await system?.stop();
  });

  const published = async () => system.redis.hget(`${system.prefix}:catalog:tools`, 'delta');

  it('a changed definition is accepted at once after its only worker stopped (SIGTERM) (issue 31)', async () => {
    const first = await system.addWorker({ MCPT_TOOLS: DELTA });
    expect(await published()).to.be.a('string');
    expect(await first.stop('SIGTERM')).to.equal(0);
    expect(await published()).to.equal(null);
    const changed = await system.addWorker({ MCPT_TOOLS: DELTA_CHANGED });
    const client = await McpTestClient.connect(system.apiUrl);
    const result = await eventually(async () => {
      const listing = await client.call('tools/list');
      const delta = (listing['tools'] as Record<string, unknown>[]).find((tool) => tool['name'] === 'delta');
      return (delta?.['inputSchema'] as { required?: string[] } | undefined)?.required?.includes('text')
        ? client.call('tools/call', { name: 'delta', arguments: { text: 'v2' } })
        : undefined;
    });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'delta v2' }]);
    await changed.stop();
  });

  it('a task whose tool no live worker serves says so in tasks/get, mcpt inspect and mcpt overview, and runs when one comes (issue 31)', async () => {
    const worker = await system.addWorker({ MCPT_DEMO: '1', WORKER_SHUTDOWN_GRACE_MS: '100' });
    const client = await McpTestClient.connect(system.apiUrl);
    const task = await eventually(() => client.createTask('wait', { seconds: 5 }).catch(() => undefined));
    const taskId = String(task['taskId']);
    const queued = await client.call('tasks/get', { taskId });
    expect(queued['statusMessage']).to.not.match(/No live worker/);
    // Stopped while the task runs: the run is handed back to the queue, the entry withdrawn.
    await eventually(async () =>
      (await client.call('tasks/get', { taskId }))['status'] === 'working' ? true : undefined,
    );
    await worker.stop('SIGTERM');
    const unserved = /^No live worker serves tool 'wait'; the task waits for one \(up to its ttl: until \d{4}-.*Z\)\.$/;
    const waiting = await eventually(async () => {
      const current = await client.call('tasks/get', { taskId });
      return current['status'] === 'working' && unserved.test(String(current['statusMessage'])) ? current : undefined;
    });
    expect(waiting['status']).to.equal('working');
    let out = '';
    const code = await runCli(['inspect', taskId, '--json'], {
      out: (text) => (out += text),
      err: () => undefined,
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code).to.equal(0);
    expect((JSON.parse(out) as { task: { statusMessage: string } }).task.statusMessage).to.match(unserved);
    // Operators see it in the overview too, per tool.
    let overview = '';
    expect(
      await runCli(['overview'], {
        out: (text) => (overview += text),
        err: () => undefined,
        env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
      }),
    ).to.equal(0);
    expect(overview).to.match(/Waiting for a worker: 1 working task\(s\) of tool wait, which no live worker serves/);
    // A worker serving it comes: the task runs to its end.
    await system.addWorker({ MCPT_DEMO: '1' });
    const result = await client.call('tasks/result', { taskId });
    expect(result['isError']).to.not.equal(true);
  });

  it('only its own entry: a tool another live worker serves stays, and still refuses a change (issue 31)', async () => {
    const one = await system.addWorker({ MCPT_TOOLS: DELTA });
    const two = await system.addWorker({ MCPT_TOOLS: DELTA });
    await one.stop('SIGTERM');
    expect(await published()).to.be.a('string');
    const refusal = await spawnWorker({ ...system.env, MCPT_TOOLS: DELTA_CHANGED }).then(
      async (worker) => {
        await worker.stop();
        return '';
      },
      (error: Error) => error.message,
    );
    expect(refusal).to.match(/Tool 'delta' is already served with a different definition/);
    await two.stop('SIGTERM');
    expect(await published()).to.equal(null);
  });
});

describe('an api whose catalog is empty (issue 31)', function () {
  this.timeout(90_000);
  let system: InProcessSystem;

  before(async () => {
    system = await startInProcess({ workers: 0, env: { CATALOG_HEARTBEAT_MS: '200', CATALOG_EMPTY_WAIT_MS: '30000' } });
  });
  after(async () => {
    await system?.stop();
  });

  const emptyWarnings = () =>
    (system.apis[0]?.records() ?? []).filter((record) =>
      String(record['message']).startsWith('the tool catalog is empty'),
    );

  it('warns once that no worker serves any tool, and not again while it stays empty (issue 31)', async () => {
    expect(emptyWarnings()).to.have.length(1);
    await sleep(2500); // more than CATALOG_RELOAD_MS: reloads of the same empty catalog say nothing more
    expect(emptyWarnings()).to.have.length(1);
    expect(String(emptyWarnings()[0]?.['hint'])).to.match(/MCPT_TOOLS=/);
  });

  it('right after start, a call of either wire waits for its tool to be published rather than answering Unknown tool (issue 31)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const call = client.call('tools/call', { name: 'gamma', arguments: {} });
    // The same on the 2026-07-28 wire, whose calls take the same path (calls/).
    const modernCall = modernResult(system.apiUrl, 'tools/call', { name: 'gamma', arguments: {} });
    const worker = await system.addWorker({ MCPT_TOOLS: GAMMA });
    expect((await call)['content']).to.deep.equal([{ type: 'text', text: 'gamma' }]);
    expect((await modernCall)['content']).to.deep.equal([{ type: 'text', text: 'gamma' }]);
    // Its worker stops: the catalog is empty again, and the api says so once more.
    await worker.stop('SIGTERM');
    await eventually(() => (emptyWarnings().length === 2 ? true : undefined));
    await sleep(500);
    expect(emptyWarnings()).to.have.length(2);
  });
});
