// Affinity (docs/gateway.md, "Affinity"): every call of one principal (or client session) reaches the same upstream
// session, across two api replicas and several workers. Over Streamable HTTP (our stateful fixture) the session id
// lives in Redis and whichever worker takes the job joins it; over stdio (sequential-thinking, a server we did not
// write) the session is a process of one worker, which holds a lease and runs all of the upstream's calls while the
// others stand by, and whose death loses that state (the documented failure mode).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { GatewayState, KeySpace } from '@mcp-tasks/engine';
import { eventually } from '../support/mcp-client.ts';
import { repoRoot, startSystem, type ChildHandle, type System } from '../support/processes.ts';
import { track } from '../support/resources.ts';

const STATEFUL = join(repoRoot, 'test/fixtures/upstream/stateful-server.mjs');
const THINKING = join(repoRoot, 'node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js');
const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef' };

/** Our stateful fixture over Streamable HTTP on a free port. */
async function startNotesServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [STATEFUL, 'http', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = track(`stateful fixture http (pid ${child.pid})`, async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const match = /listening on port (\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the fixture exited with ${String(code)}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop };
}

/** Every process below `pid`, and whether one is alive (Linux /proc). */
function descendants(pid: number): number[] {
  const found: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    for (const child of children) found.push(child, ...descendants(child));
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function text(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}

describe('gateway affinity across two api replicas and several workers (sequential-thinking over stdio, our fixture over HTTP)', function () {
  this.timeout(120_000);
  let system: System;
  let notes: { url: string; stop: () => Promise<void> };
  let config: string;
  const workers: ChildHandle[] = [];
  const sessions: (() => Promise<void>)[] = [];

  /** A client session of `principal` on api replica `api`. */
  async function session(principal: keyof typeof KEYS, api: number): Promise<Client> {
    const client = new Client({ name: `affinity-${principal}`, version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL((system.apis[api] as { url: string }).url), {
      requestInit: { headers: { Authorization: `Bearer ${KEYS[principal]}` } },
    });
    sessions.push(
      track(`affinity client ${principal}`, async () => {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      }),
    );
    await client.connect(transport);
    return client;
  }

  async function call(client: Client, tool: string, args: Record<string, unknown>): Promise<string> {
    await eventually(async () => ((await client.listTools()).tools.some((t) => t.name === tool) ? true : undefined));
    return text((await client.callTool({ name: tool, arguments: args })) as CallToolResult);
  }

  const remember = async (client: Client, tool: string, note: string) =>
    (JSON.parse(await call(client, tool, { note })) as { notes: string[] }).notes;

  /** sequential-thinking's history length after one more thought of `client`'s principal. */
  async function think(client: Client, n: number): Promise<number> {
    const answer = await call(client, 'think_sequentialthinking', {
      thought: `thought ${n}`,
      thoughtNumber: n,
      totalThoughts: 9,
      nextThoughtNeeded: true,
    });
    return (JSON.parse(answer) as { thoughtHistoryLength: number }).thoughtHistoryLength;
  }

  const addWorker = async () => {
    const worker = await system.addWorker({ MCPT_UPSTREAMS: config });
    workers.push(worker);
    return worker;
  };

  before(async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpt-affinity-')));
    notes = await startNotesServer();
    config = join(dir, 'upstreams.json');
    const upstreams = [
      { name: 'thinking', command: process.execPath, args: [THINKING], prefix: 'think_', affinity: 'per-principal' },
      { name: 'notes', url: notes.url, prefix: 'notes_', allow: ['remember'], affinity: 'per-principal' },
      { name: 'session-notes', url: notes.url, prefix: 'snotes_', allow: ['remember'], affinity: 'per-client-session' },
    ].map((upstream) => ({ ...upstream, ownerLeaseMs: 1000, connectTimeoutMs: 5000 }));
    writeFileSync(config, JSON.stringify({ upstreams }));
    system = await startSystem({
      apis: 2,
      workers: 0,
      env: { AUTH_API_KEYS: `alice:${KEYS.alice},bob:${KEYS.bob}`, CATALOG_HEARTBEAT_MS: '500' },
    });
  });

  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((close) => close()));
  });

  after(async () => {
    await system?.stop();
    await notes?.stop();
  });

  it('per-principal over HTTP: the upstream session is in Redis; a principal’s calls on another worker join it, and another principal has its own', async () => {
    const first = await addWorker();
    const alice = await session('alice', 0);
    const bob = await session('bob', 1);
    expect(await remember(alice, 'notes_remember', 'a1')).to.deep.equal(['a1']);
    expect(await remember(bob, 'notes_remember', 'b1')).to.deep.equal(['b1']);
    // The first worker stops (its children with it): the next calls run on the second, through the other api
    // replica too.
    await addWorker();
    const children = descendants(first.process.pid as number);
    await first.stop();
    // npx's own child sees its stdin close when npx goes, a moment after the worker: none is left behind.
    await eventually(() => (children.some(alive) ? undefined : true), 10_000, 100);
    const aliceElsewhere = await session('alice', 1);
    expect(await remember(aliceElsewhere, 'notes_remember', 'a2')).to.deep.equal(['a1', 'a2']);
    expect(await remember(alice, 'notes_remember', 'a3')).to.deep.equal(['a1', 'a2', 'a3']);
    expect(await remember(bob, 'notes_remember', 'b2')).to.deep.equal(['b1', 'b2']);
  });

  it('per-client-session over HTTP: each client session of one principal has its own upstream session', async () => {
    const one = await session('alice', 0);
    const two = await session('alice', 1);
    expect(await remember(one, 'snotes_remember', 'x')).to.deep.equal(['x']);
    expect(await remember(two, 'snotes_remember', 'y')).to.deep.equal(['y']);
    expect(await remember(one, 'snotes_remember', 'z')).to.deep.equal(['x', 'z']);
  });

  it('per-principal over stdio (sequential-thinking): one worker runs the upstream’s calls, each principal’s thoughts stay in its own session across both api replicas', async () => {
    const earlier = workers.at(-1) as ChildHandle;
    const added = await addWorker();
    const gateway = new GatewayState(system.redis, new KeySpace(system.prefix));
    const isOf = (worker: ChildHandle, name: string) => name.endsWith(`-${String(worker.process.pid)}`);
    // One of the two holds the upstream's lease and the other stands by; which is not fixed (a lease renewed late on
    // a loaded machine may pass to the other before any call). The standby publishes its view on its heartbeat once
    // it has started and learnt the upstream's tools, which a loaded machine can take well over 10 s to do.
    const standbyName = await eventually(
      async () =>
        (await gateway.upstreams()).find(
          (status) =>
            status.upstream === 'thinking' &&
            status.state === 'standby' &&
            (isOf(earlier, status.worker) || isOf(added, status.worker)),
        )?.worker,
      60_000,
    );
    const standby = isOf(added, standbyName) ? added : earlier;
    const owner = standby === added ? earlier : added;
    const alice = await session('alice', 0);
    const aliceElsewhere = await session('alice', 1);
    const bob = await session('bob', 1);
    expect(await think(alice, 1)).to.equal(1);
    expect(await think(bob, 1)).to.equal(1);
    expect(await think(aliceElsewhere, 2)).to.equal(2);
    expect(await think(alice, 3)).to.equal(3);
    expect(await think(bob, 2)).to.equal(2);
    const ran = (worker: ChildHandle) =>
      worker
        .records()
        .filter((record) => record['message'] === 'task.completed' && record['tool'] === 'think_sequentialthinking');
    await eventually(() => (ran(owner).length === 5 ? true : undefined));
    expect(ran(standby), 'the standby takes none of its jobs').to.have.length(0);
    // The failure mode: the owner dies, and with it the upstream's state; the standby takes over within the lease.
    // Its children see their stdin close and exit: none is left behind.
    const children = descendants(owner.process.pid as number);
    expect(children.length, 'the owner runs sequential-thinking').to.be.above(0);
    await owner.stop('SIGKILL');
    expect(await think(alice, 4)).to.equal(1);
    await eventually(() => (children.some(alive) ? undefined : true));
    await eventually(() => (ran(standby).length === 1 ? true : undefined));
  });
});
