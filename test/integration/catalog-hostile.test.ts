// Hostile catalog entries and arguments (issue 30; docs/security.md, "Trust boundaries"; docs/catalog.md, "Bounds"):
// each entry goes through the real publish path (Redis, as docs/job-contract.md tells a consumer to publish, or a
// worker's publish script) to a real api and worker, and none may crash or stall them. Bounded: a few dozen entries,
// a few hundred calls, all on 127.0.0.1. The "cost" section (issue 37; docs/catalog.md, "Budgets") runs each attack on
// what admitting and validating costs, from a catalog writer and from an upstream MCP server behind the gateway
// (test/fixtures/upstream/hostile-server.mjs), with tools/list and both processes' /healthz timed meanwhile.
import { join } from 'node:path';
import { expect } from 'chai';
import { runCli } from '@mcp-tasks/cli';
import { closeRedis, createEngine, createRedis } from '@mcp-tasks/engine';
import { freePort } from '../../scripts/lib/ports.ts';
import { eventually, expectRpcError, McpTestClient, sleep } from '../support/mcp-client.ts';
import { startSystem, startWorker, type ServiceHandle, type System } from '../support/in-process.ts';
import {
  repoRoot,
  spawnWorker,
  startSystem as startProcesses,
  type ChildHandle,
  type System as ProcessSystem,
} from '../support/processes.ts';

const ADMIN_TOKEN = 'hostile-catalog-admin-token';
const MAX_TOOLS = 40;
const DEMO_TOOLS = 9;

function entry(name: string, inputSchema: unknown): Record<string, unknown> {
  return {
    description: 'a hostile entry',
    external: true,
    inputSchema,
    name,
    queue: `ext-${name}`,
    retrySafe: true,
    taskSupport: 'optional',
  };
}

function nestedEntry(name: string, levels: number): string {
  const nested = '{"a":'.repeat(levels) + '{}' + '}'.repeat(levels);
  return JSON.stringify(entry(name, {})).replace('"inputSchema":{}', `"inputSchema":${nested}`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

describe('hostile catalog entries and arguments (real publish path, real api and worker)', function () {
  this.timeout(90_000);
  let system: System;
  let client: McpTestClient;
  let published: string[] = [];

  /** Publishes a raw entry as a consumer in another language does (docs/job-contract.md). */
  async function publishRaw(name: string, raw: string): Promise<void> {
    published.push(name);
    await system.redis.hset(`${system.prefix}:catalog:tools`, name, raw);
    await system.redis.zadd(`${system.prefix}:catalog:seen`, Date.now(), name);
    await system.redis.publish(`${system.prefix}:catalog-changed`, '1');
  }

  async function listed(): Promise<string[]> {
    const listing = await client.call('tools/list');
    return (listing['tools'] as { name: string }[]).map((tool) => tool.name);
  }

  /** The api's and the worker's "refused" log lines about `tool`. */
  function refusalLogs(child: ServiceHandle, tool: string): Record<string, unknown>[] {
    return child.records().filter((r) => r['message'] === 'tool catalog entry refused' && r['tool'] === tool);
  }

  function alive(child: ServiceHandle): boolean {
    return child.alive();
  }

  async function overview(): Promise<{ refusedTools: { tool: string; reason: string; publisher?: string }[] }> {
    let out = '';
    const code = await runCli(['overview', '--json'], {
      out: (text) => (out += text),
      err: () => undefined,
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix, CATALOG_MAX_TOOLS: String(MAX_TOOLS) },
    });
    expect(code).to.equal(0);
    return JSON.parse(out) as { refusedTools: { tool: string; reason: string; publisher?: string }[] };
  }

  before(async () => {
    system = await startSystem({
      env: {
        CATALOG_RELOAD_MS: '200',
        CATALOG_GRACE_MS: '300000',
        CATALOG_MAX_TOOLS: String(MAX_TOOLS),
        ADMIN_TOKEN,
      },
    });
    client = await McpTestClient.connect(system.apiUrl);
    await eventually(async () => ((await listed()).length === DEMO_TOOLS ? true : undefined));
  });
  afterEach(async () => {
    if (published.length === 0) return;
    await system.redis.hdel(`${system.prefix}:catalog:tools`, ...published);
    await system.redis.zrem(`${system.prefix}:catalog:seen`, ...published);
    await system.redis.publish(`${system.prefix}:catalog-changed`, '1');
    published = [];
  });
  after(async () => {
    await system?.stop();
  });

  it('an entry nested 20,000 (or 5,000) levels deep crashes neither api nor worker; each logs its refusal once', async () => {
    await publishRaw('deep_20000', nestedEntry('deep_20000', 20_000));
    await publishRaw('deep_5000', nestedEntry('deep_5000', 5_000));
    const [api] = system.apis;
    const [worker] = system.workers;
    await eventually(() => (refusalLogs(api!, 'deep_5000').length > 0 ? true : undefined));
    await eventually(() => (refusalLogs(worker!, 'deep_5000').length > 0 ? true : undefined));
    await sleep(1500); // several reloads (CATALOG_RELOAD_MS=200): the refusal is not logged again
    for (const child of [api!, worker!]) {
      expect(alive(child), child.name).to.equal(true);
      expect(refusalLogs(child, 'deep_5000')).to.have.length(1);
      expect(refusalLogs(child, 'deep_5000')[0]).to.deep.include({
        publisher: 'unknown',
        reason: 'it is nested more than CATALOG_MAX_DEPTH (64) levels deep',
      });
      expect(refusalLogs(child, 'deep_20000')).to.have.length(1);
      expect(String(refusalLogs(child, 'deep_20000')[0]?.['reason'])).to.match(/more than CATALOG_MAX_ENTRY_BYTES/);
    }
    expect(await listed()).to.not.include.members(['deep_5000', 'deep_20000']);
    const echo = await client.call('tools/call', { name: 'echo', arguments: { text: 'still here' } });
    expect(echo['content']).to.deep.equal([{ type: 'text', text: 'still here' }]);
    await expectRpcError(
      client.call('tools/call', { name: 'deep_5000', arguments: {} }),
      -32603,
      "Tool 'deep_5000' cannot be called: its catalog entry is refused (it is nested more than CATALOG_MAX_DEPTH " +
        '(64) levels deep); its publisher must fix it',
    );
  });

  it('a 20 MB entry is refused without being fetched: the api keeps answering at once through every reload', async () => {
    await publishRaw('huge', JSON.stringify(entry('huge', { type: 'object', description: 'x'.repeat(20_000_000) })));
    const [api] = system.apis;
    await sleep(1000); // five reloads (CATALOG_RELOAD_MS=200): the api has met the entry before pings are timed
    const pings: number[] = [];
    const until = Date.now() + 3000; // fifteen more reloads
    while (Date.now() < until) {
      const started = performance.now();
      await client.call('ping');
      pings.push(performance.now() - started);
      await sleep(50);
    }
    // Fetched and parsed at each reload, it held the api for seconds: one ping got through in these 3 s.
    expect(pings.length).to.be.at.least(20);
    expect(median(pings), `ping latencies ${pings.map(Math.round).join(', ')} ms`).to.be.below(100);
    expect(refusalLogs(api!, 'huge')).to.have.length(1);
    expect(refusalLogs(api!, 'huge')[0]?.['reason']).to.match(
      /^it is 200\d{5} bytes of JSON, more than CATALOG_MAX_ENTRY_BYTES \(65536\)$/,
    );
    expect(await listed()).to.not.include('huge');
  });

  it('entries of the wrong shape are refused with their reason, in mcpt overview and the dashboard', async () => {
    const cases: [string, string, RegExp][] = [
      ['not_json', '{"name": "not_json", ', /^it is not JSON$/],
      ['an_array', '[1, 2, 3]', /^it is not a catalog entry/],
      ['a_null', 'null', /^it is not a catalog entry/],
      ['schema_string', JSON.stringify(entry('schema_string', 'a string')), /inputSchema: /],
      ['name_number', JSON.stringify({ ...entry('x', {}), name: 42 }), /name: /],
      ['echo_shadow', JSON.stringify(entry('echo', { type: 'object' })), /published under the name 'echo_shadow'/],
    ];
    for (const [name, raw] of cases) await publishRaw(name, raw);
    const [api] = system.apis;
    await eventually(() => (refusalLogs(api!, 'echo_shadow').length > 0 ? true : undefined));
    expect(alive(api!)).to.equal(true);
    const names = await listed();
    expect(names).to.have.length(DEMO_TOOLS);
    const listing = (await client.call('tools/list'))['tools'] as { name: string; description: string }[];
    expect(listing.filter((tool) => tool.name === 'echo').map((tool) => tool.description)).to.deep.equal([
      'Returns the text it was given. Plain calls only (taskSupport forbidden).',
    ]);
    const echo = await client.call('tools/call', { name: 'echo', arguments: { text: 'the real echo' } });
    expect(echo['content']).to.deep.equal([{ type: 'text', text: 'the real echo' }]);

    const { refusedTools } = await overview();
    const dashboard = (await (
      await fetch(`${new URL(system.apiUrl).origin}/admin/api/overview`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json()) as { refusedTools: { tool: string; reason: string }[] };
    for (const [name, , reason] of cases) {
      expect(refusedTools.find((r) => r.tool === name)?.reason, `overview: ${name}`).to.match(reason);
      expect(dashboard.refusedTools.find((r) => r.tool === name)?.reason, `dashboard: ${name}`).to.match(reason);
      expect(refusalLogs(api!, name), name).to.have.length(1);
    }
  });

  it('$ref loops, unresolvable refs and invalid patterns are refused; a call answers an error naming the tool', async () => {
    const schemas: [string, Record<string, unknown>, RegExp][] = [
      ['ref_self', { $ref: '#' }, /a \$ref loop at \//],
      ['ref_pair', { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, /\$ref loop/],
      ['ref_missing', { $ref: '#/$defs/nowhere' }, /unresolvable \$ref/],
      ['ref_remote', { $ref: 'http://127.0.0.1:9/schema.json' }, /unresolvable \$ref/],
      ['bad_pattern', { type: 'object', properties: { s: { type: 'string', pattern: '(a' } } }, /does not compile/],
      ['not_a_schema', { type: 'object', properties: { n: { type: 'integr' } } }, /not a valid JSON Schema/],
    ];
    for (const [name, schema] of schemas) await publishRaw(name, JSON.stringify(entry(name, schema)));
    const [api, worker] = [system.apis[0]!, system.workers[0]!];
    await eventually(() => (refusalLogs(api, 'not_a_schema').length > 0 ? true : undefined));
    for (const [name, , reason] of schemas) {
      const error = await expectRpcError(
        client.call('tools/call', { name, arguments: { s: 'a' }, task: {} }),
        -32603,
        new RegExp(
          `^-32603: Tool '${name}' cannot be called: its catalog entry is refused \\(its inputSchema cannot be used: `,
        ),
      );
      expect(error.message, name).to.match(reason);
    }
    expect(alive(api) && alive(worker)).to.equal(true);
    expect(await listed()).to.have.length(DEMO_TOOLS);
  });

  it('two tools whose schemas carry the same $id are both callable, each validated by its own schema', async () => {
    await publishRaw(
      'clash_a',
      JSON.stringify(
        entry('clash_a', { $id: 'same.json', type: 'object', properties: { v: { type: 'string' } }, required: ['v'] }),
      ),
    );
    await publishRaw(
      'clash_b',
      JSON.stringify(
        entry('clash_b', { $id: 'same.json', type: 'object', properties: { v: { type: 'number' } }, required: ['v'] }),
      ),
    );
    await eventually(async () => ((await listed()).includes('clash_b') ? true : undefined));
    for (const [name, good, bad, problem] of [
      ['clash_a', 'text', 1, 'v: must be string'],
      ['clash_b', 1, 'text', 'v: must be number'],
    ] as const) {
      const created = await client.call('tools/call', { name, arguments: { v: good }, task: {} });
      expect(created['task'], name).to.have.property('taskId');
      await expectRpcError(
        client.call('tools/call', { name, arguments: { v: bad }, task: {} }),
        -32602,
        `Invalid arguments for tool '${name}': ${problem}`,
      );
    }
  });

  it('while hostile arguments are validated, tools/list answers within 100 ms (^(a+)+$ and thirty a’s and a !)', async () => {
    const schema = {
      type: 'object',
      properties: { s: { type: 'string', pattern: '^(a+)+$' } },
      patternProperties: { '^(b+)+$': { type: 'string' } },
      propertyNames: { pattern: '^((b|s)+)+$' },
    };
    await publishRaw('catastrophic', JSON.stringify(entry('catastrophic', schema)));
    await eventually(async () => ((await listed()).includes('catastrophic') ? true : undefined));
    const hostileArguments = [
      { s: 'a'.repeat(30) + '!' },
      { ['b'.repeat(30) + '!']: 'x' },
      { ['s'.repeat(30) + '!']: 'x' },
    ];
    const hostile = await McpTestClient.connect(system.apiUrl);
    let stop = false;
    const callers = hostileArguments.map(async (args) => {
      let calls = 0;
      while (!stop) {
        await expectRpcError(
          hostile.call('tools/call', { name: 'catastrophic', arguments: args, task: {} }),
          -32602,
          /^-32602: Invalid arguments for tool 'catastrophic': /,
        );
        calls++;
      }
      return calls;
    });
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      await client.call('tools/list');
      latencies.push(performance.now() - started);
      await sleep(25);
    }
    stop = true;
    const calls = await Promise.all(callers);
    // Before linear-time patterns one such call held the api's event loop for 4 to 44 s.
    expect(Math.min(...calls), 'hostile calls answered by each caller meanwhile').to.be.at.least(2);
    expect(median(latencies), `tools/list latencies ${latencies.map(Math.round).join(', ')} ms`).to.be.below(100);
    expect(Math.max(...latencies)).to.be.below(1000);
  });

  it('an unchanged entry is neither parsed nor compiled again at the next read; a changed one is', async () => {
    const redis = createRedis(system.redisUrl, 'catalog-hostile');
    const engine = createEngine({ redis }, { REDIS_PREFIX: system.prefix, SESSION_IDLE_TTL_MS: 60_000 });
    try {
      await publishRaw('steady', JSON.stringify(entry('steady', { type: 'object' })));
      const first = await engine.catalog.readAll();
      const second = await engine.catalog.readAll();
      expect(first.entries.get('steady')).to.be.an('object');
      // The same object: the verdict kept with the entry's JSON was used, not a new parse.
      expect(second.entries.get('steady')).to.equal(first.entries.get('steady'));
      expect(second.entries.get('echo')).to.equal(first.entries.get('echo'));
      await publishRaw('steady', JSON.stringify(entry('steady', { type: 'object', required: ['x'] })));
      const third = await engine.catalog.readAll();
      expect(third.entries.get('steady')?.inputSchema).to.deep.equal({ type: 'object', required: ['x'] });
    } finally {
      await engine.close();
      await closeRedis(redis);
    }
  });

  it(`beyond CATALOG_MAX_TOOLS (${MAX_TOOLS}) live tools, the rest by name is left out and shown to operators`, async () => {
    for (let i = 0; i < 45; i++) {
      const name = `zz_flood_${String(i).padStart(2, '0')}`;
      await publishRaw(name, JSON.stringify(entry(name, { type: 'object' })));
    }
    await eventually(async () => ((await listed()).length === MAX_TOOLS ? true : undefined));
    const names = await listed();
    expect(names).to.include('zz_flood_30').and.not.include('zz_flood_31');
    const { refusedTools } = await overview();
    const left = refusedTools.filter((r) => r.reason.startsWith('more than CATALOG_MAX_TOOLS (40) tools are live'));
    expect(left.map((r) => r.tool)).to.deep.equal(
      Array.from({ length: 14 }, (_, i) => `zz_flood_${String(31 + i).padStart(2, '0')}`),
    );
  });

  it('a worker whose zod schema is thousands of levels deep refuses to start, naming the tool and the bound', async () => {
    const refusal = await spawnWorker({ ...system.env, MCPT_TOOLS: './test/fixtures/catalog/too-deep.ts' }).then(
      async (worker) => {
        await worker.stop();
        return 'started';
      },
      (error: Error) => error.message,
    );
    expect(refusal).to.match(/exited with 1 before it was ready/);
    expect(refusal).to.match(
      /Tool 'deep_tool' cannot be published to the tool catalog: its schema is nested too deeply to convert to JSON Schema \(the catalog allows CATALOG_MAX_DEPTH=64 levels\)/,
    );
    expect(refusal).to.not.match(/RangeError/);
  });

  it('an entry a worker with larger bounds publishes is refused at read, naming that worker', async () => {
    // In this process like the rest of the describe: what is tested is the api's reading, not the worker's process.
    const generous = await startWorker({
      ...system.env,
      MCPT_TOOLS: './test/fixtures/catalog/too-large.ts',
      CATALOG_MAX_ENTRY_BYTES: String(1024 * 1024),
    });
    published.push('large_tool');
    try {
      const [api] = system.apis;
      await eventually(() => (refusalLogs(api!, 'large_tool').length > 0 ? true : undefined));
      const workerName = generous.records().find((r) => r['message'] === 'worker ready')?.['worker'];
      expect(workerName).to.be.a('string');
      expect(refusalLogs(api!, 'large_tool')[0]).to.deep.include({ publisher: workerName });
      const { refusedTools } = await overview();
      expect(refusedTools.find((r) => r.tool === 'large_tool')).to.deep.include({ publisher: workerName });
      expect(await listed()).to.not.include('large_tool');
    } finally {
      await generous.stop();
    }
  });
});

/** The value below which `share` of the samples fall (p99: 0.99), by the nearest rank. */
function percentile(values: readonly number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(share * sorted.length) - 1)] as number;
}

/** 63 KB: 1,600 properties, each a distinct counted repetition (issue 37, attack 1: 640 MB once compiled). */
function patternFlood(): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 1600; i++) {
    const c = String.fromCharCode(97 + (i % 26));
    properties[`p${i}`] = { pattern: `(?:${c}|${c}${c}|${c}${c}${c}){${1000 - Math.floor(i / 26)}}` };
  }
  return { type: 'object', properties };
}

/** `$defs.d_i = {anyOf: [{$ref: d_i+1}, {$ref: d_i+1}]}` (attack 2): 1.5 KB, 2^22 paths at depth 22. */
function refGraph(depth: number, keyword = 'anyOf'): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) {
    $defs[`d${i}`] = { [keyword]: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  }
  $defs[`d${depth}`] = { type: 'string' };
  return { $defs, type: 'object', properties: { x: { $ref: '#/$defs/d0' } } };
}

describe('cost: budgets, not shapes (issue 37): each attack against a real api and worker (default heap)', function () {
  this.timeout(120_000);
  const HOSTILE = join(repoRoot, 'test/fixtures/upstream/hostile-server.mjs');
  // Processes of their own: the budgets bound what one attack costs a process (its heap, its event loop).
  let system: ProcessSystem;
  let client: McpTestClient;
  let api: ChildHandle;
  let worker: ChildHandle;
  let workerHealth: string;
  const pids: number[] = [];
  let published: string[] = [];
  const figures: string[] = [];

  async function publishRaw(entries: [string, string][], publisher?: string): Promise<void> {
    const pipeline = system.redis.pipeline();
    for (const [name, raw] of entries) {
      published.push(name);
      pipeline.hset(`${system.prefix}:catalog:tools`, name, raw);
      pipeline.zadd(`${system.prefix}:catalog:seen`, Date.now(), name);
      if (publisher) pipeline.hset(`${system.prefix}:catalog:publishers`, name, publisher);
    }
    pipeline.publish(`${system.prefix}:catalog-changed`, '1');
    await pipeline.exec();
  }

  async function listed(): Promise<string[]> {
    return ((await client.call('tools/list'))['tools'] as { name: string }[]).map((tool) => tool.name);
  }

  function refusals(child: ChildHandle, tool: string): Record<string, unknown>[] {
    return child.records().filter((r) => r['message'] === 'tool catalog entry refused' && r['tool'] === tool);
  }

  async function timed(request: () => Promise<unknown>): Promise<number> {
    const started = performance.now();
    await request();
    return performance.now() - started;
  }

  /**
   * Runs `attack` while tools/list, the api's /healthz and the worker's /healthz are asked every 25 ms (at least
   * `samples` times each); records their latencies (median, 99th percentile) as the suite's figures and answers the
   * worst median and the worst p99 of the three. The suite holds medians to 100 ms and the 99th percentile to 1 s:
   * before the budgets, one attack held a process for 7 to 87 s; a 99th percentile on a machine other work shares
   * says more about that work than about ours (the figures say both: compare with the baseline).
   */
  async function whileSampling<T>(
    label: string,
    attack: () => Promise<T>,
    samples = 40,
  ): Promise<{ result: T; median: number; p99: number }> {
    let done = false;
    const latencies: Record<string, number[]> = { 'tools/list': [], 'api /healthz': [], 'worker /healthz': [] };
    const sample = async (name: string, request: () => Promise<unknown>) => {
      while (!done || (latencies[name] as number[]).length < samples) {
        (latencies[name] as number[]).push(await timed(request));
        await sleep(25);
      }
    };
    const probe = (url: string) => async () => expect((await fetch(url)).status).to.equal(200);
    const sampling = Promise.all([
      sample('tools/list', () => client.call('tools/list')),
      sample('api /healthz', probe(`${new URL(system.apiUrl).origin}/healthz`)),
      sample('worker /healthz', probe(workerHealth)),
    ]);
    const result = await attack().finally(() => (done = true));
    await sampling;
    const summary = Object.entries(latencies).map(
      ([name, values]) =>
        `${name} median ${percentile(values, 0.5).toFixed(1)} / p99 ${percentile(values, 0.99).toFixed(1)} ms ` +
        `(n=${values.length})`,
    );
    figures.push(`${label}: ${summary.join(', ')}`);
    const all = Object.values(latencies);
    return {
      result,
      median: Math.max(...all.map((values) => percentile(values, 0.5))),
      p99: Math.max(...all.map((values) => percentile(values, 0.99))),
    };
  }

  function expectResponsive({ median, p99 }: { median: number; p99: number }): void {
    expect(median, 'the worst median latency (ms)').to.be.below(100);
    expect(p99, 'the worst 99th percentile (ms)').to.be.below(1000);
  }

  function expectAlive(): void {
    for (const child of [api, worker]) {
      expect(child.process.exitCode, child.name).to.equal(null);
      expect(child.process.signalCode, child.name).to.equal(null);
    }
    expect([api.process.pid, worker.process.pid]).to.deep.equal(pids);
  }

  async function echo(): Promise<void> {
    const result = await client.call('tools/call', { name: 'echo', arguments: { text: 'still here' } });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'still here' }]);
  }

  before(async () => {
    system = await startProcesses({
      workers: 0,
      // A machine busy with other work must not quarantine by time what these tests need admitted (key_patterns
      // compiles 1,200 patterns); the validation deadline is the default.
      env: { CATALOG_RELOAD_MS: '200', CATALOG_GRACE_MS: '300000', ADMIN_TOKEN, SCHEMA_COMPILE_TIMEOUT_MS: '30000' },
    });
    const metricsPort = await freePort();
    workerHealth = `http://127.0.0.1:${metricsPort}/healthz`;
    worker = await system.addWorker({
      MCPT_DEMO: '1',
      MCPT_TOOLS: './test/fixtures/catalog/caller.ts',
      UPSTREAM_MCP_COMMAND: `${process.execPath} ${HOSTILE}`,
      UPSTREAM_MCP_NAME: 'hostile',
      WORKER_METRICS_PORT: String(metricsPort),
      WORKER_METRICS_HOST: '127.0.0.1',
    });
    api = system.apis[0] as ChildHandle;
    pids.push(api.process.pid as number, worker.process.pid as number);
    client = await McpTestClient.connect(system.apiUrl);
    await eventually(async () => ((await listed()).includes('a_slow') ? true : undefined), 60_000);
    await whileSampling('baseline (no attack)', () => Promise.resolve());
  });
  afterEach(async () => {
    if (published.length === 0) return;
    await system.redis.hdel(`${system.prefix}:catalog:tools`, ...published);
    await system.redis.zrem(`${system.prefix}:catalog:seen`, ...published);
    await system.redis.publish(`${system.prefix}:catalog-changed`, '1');
    published = [];
  });
  after(async () => {
    if (figures.length > 0) console.log(`      figures:\n        ${figures.join('\n        ')}`);
    await system?.stop();
  });

  it('attack 1: two 63 KB entries of 1,600 counted repetitions, and an upstream’s, are quarantined at admission and shown to operators', async () => {
    const raw = (name: string) => JSON.stringify(entry(name, patternFlood()));
    expect(raw('flood_1').length).to.be.within(60_000, 65_536);
    const sampled = await whileSampling('attack 1', async () => {
      const started = performance.now();
      await publishRaw(
        [
          ['flood_1', raw('flood_1')],
          ['flood_2', raw('flood_2')],
        ],
        'writer-x',
      );
      await eventually(
        () => (refusals(api, 'flood_2').length > 0 && refusals(worker, 'flood_2').length > 0 ? true : undefined),
        20_000,
        10,
      );
      return performance.now() - started;
    });
    figures.push(
      `attack 1: both entries quarantined by the api and the worker ${sampled.result.toFixed(0)} ms after publishing`,
    );
    expectResponsive(sampled);
    const reason =
      /^its inputSchema is over budget: its patterns compile to up to \d+ RE2 instructions, more than CATALOG_MAX_PATTERN_SIZE \(20000\)$/;
    for (const child of [api, worker]) {
      expect(refusals(child, 'flood_1'), child.name).to.have.length(1);
      expect(refusals(child, 'flood_1')[0]).to.deep.include({ publisher: 'writer-x' });
      expect(String(refusals(child, 'flood_1')[0]?.['reason'])).to.match(reason);
    }
    // The upstream's: left out by the worker, which names its upstream; one log line, not one per listing.
    const leftOut = worker
      .records()
      .filter((r) => r['message'] === 'upstream tool left out: the tool catalog would refuse it');
    expect(leftOut.filter((r) => r['tool'] === 'a_patterns')).to.have.length(1);
    expect(leftOut.find((r) => r['tool'] === 'a_patterns')).to.deep.include({ upstream: 'hostile' });
    const { refusedTools } = await overviewOf(system);
    expect(refusedTools.find((r) => r.tool === 'flood_1')).to.deep.include({ publisher: 'writer-x' });
    expect(refusedTools.find((r) => r.tool === 'a_patterns')?.reason).to.match(reason);
    expect(refusedTools.find((r) => r.tool === 'a_patterns')?.publisher).to.match(/^worker-.*\/hostile$/);
    const dashboard = (await (
      await fetch(`${new URL(system.apiUrl).origin}/admin/api/overview`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json()) as { refusedTools: { tool: string }[] };
    expect(dashboard.refusedTools.map((r) => r.tool)).to.include.members(['flood_1', 'flood_2', 'a_patterns']);
    const ready = (await (await fetch(`${new URL(system.apiUrl).origin}/readyz`)).json()) as {
      catalog: { refused: number };
      upstreams: { refused?: number }[];
    };
    expect(ready.catalog.refused).to.be.at.least(2);
    expect(ready.upstreams[0]?.refused).to.equal(807); // beyond maxTools (200): 805; over budget: 2
    await echo();
    expect((await client.call('tools/call', { name: 'a_ping', arguments: {} }))['content']).to.deep.equal([
      { type: 'text', text: 'pong' },
    ]);
    expectAlive();
  });

  it('attack 2: a 1.5 KB $ref/anyOf graph of depth 22, its oneOf twin and a $dynamicRef loop are quarantined at admission; calls and child calls say why', async () => {
    const dynamicLoop = {
      $id: 'https://example.com/root',
      $dynamicAnchor: 'n',
      allOf: [{ $ref: 's' }],
      $defs: {
        s: { $id: 's', $defs: { leaf: { $dynamicAnchor: 'n', type: 'string' } }, anyOf: [{ $dynamicRef: '#n' }] },
      },
    };
    const refs = JSON.stringify(entry('refs_22', refGraph(22)));
    expect(refs.length).to.be.below(1700);
    const sampled = await whileSampling('attack 2', async () => {
      const started = performance.now();
      await publishRaw([
        ['refs_22', refs],
        ['oneof_22', JSON.stringify(entry('oneof_22', refGraph(22, 'oneOf')))],
        ['dynamic_loop', JSON.stringify(entry('dynamic_loop', dynamicLoop))],
      ]);
      await eventually(() => (refusals(api, 'dynamic_loop').length > 0 ? true : undefined), 20_000, 10);
      return performance.now() - started;
    });
    figures.push(
      `attack 2: the depth-22 graphs and the $dynamicRef loop quarantined by the api ${sampled.result.toFixed(0)} ms ` +
        'after publishing',
    );
    expectResponsive(sampled);
    const budget =
      'its inputSchema is over budget: up to 16777214 subschemas apply to one value of the arguments through $ref, ' +
      '$dynamicRef, anyOf, oneOf, allOf, not and if, more than CATALOG_MAX_SCHEMA_PATHS (10000)';
    for (const name of ['refs_22', 'oneof_22']) {
      await expectRpcError(
        client.call('tools/call', { name, arguments: { x: 1 }, task: {} }),
        -32603,
        `Tool '${name}' cannot be called: its catalog entry is refused (${budget}); its publisher must fix it`,
      );
    }
    await expectRpcError(
      client.call('tools/call', { name: 'dynamic_loop', arguments: {}, task: {} }),
      -32603,
      /its inputSchema cannot be used: it has a \$ref loop at .* through \$ref, \$dynamicRef and in-place keywords/,
    );
    // A worker's child call (ctx.callTool) is held to the same verdict, from the worker's own reading.
    await eventually(() => (refusals(worker, 'refs_22').length > 0 ? true : undefined));
    const child = await client.call('tools/call', {
      name: 'call_with',
      arguments: { tool: 'refs_22', arguments: { x: 1 } },
    });
    expect(child['content']).to.deep.equal([
      {
        type: 'text',
        text: `refused: Tool 'refs_22' cannot be called: its catalog entry is refused (${budget}); its publisher must fix it`,
      },
    ]);
    const { refusedTools } = await overviewOf(system);
    expect(refusedTools.find((r) => r.tool === 'a_refs')?.reason).to.equal(budget); // the upstream's, at publish
    await echo();
    expectAlive();
  });

  it('attack 3: calls with 60 KB against (?:a|aa|aaa){1000}$ and 20,000 keys against 1,200 patternProperties are refused with -32602 at SCHEMA_VALIDATION_TIMEOUT_MS, on the api and (a gateway’s tool) in a worker, while both answer', async () => {
    const slow = JSON.stringify(
      entry('slow_pattern', { type: 'object', properties: { s: { type: 'string', pattern: '(?:a|aa|aaa){1000}$' } } }),
    );
    const patternProperties = Object.fromEntries(
      Array.from({ length: 1200 }, (_, i) => [`^k${i}x`, { type: 'string' }] as const),
    );
    await publishRaw([
      ['slow_pattern', slow],
      ['key_patterns', JSON.stringify(entry('key_patterns', { type: 'object', patternProperties }))],
    ]);
    await eventually(async () => ((await listed()).includes('key_patterns') ? true : undefined), 30_000);
    const long = { s: 'a'.repeat(60_000) + 'b' };
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, 'v']));
    const refusedIn = async (name: string, args: Record<string, unknown>) => {
      const started = performance.now();
      await expectRpcError(
        client.call('tools/call', { name, arguments: args, task: {} }),
        -32602,
        `Invalid arguments for tool '${name}': validating them took more than SCHEMA_VALIDATION_TIMEOUT_MS (1000)`,
      );
      return performance.now() - started;
    };
    const sampled = await whileSampling('attack 3', async () => {
      const api60k = await refusedIn('slow_pattern', long);
      const keys20k = await refusedIn('key_patterns', keys);
      const started = performance.now();
      const child = await client.call('tools/call', {
        name: 'call_with',
        arguments: { tool: 'a_slow', arguments: long },
      });
      return { api60k, keys20k, child, worker60k: performance.now() - started };
    });
    const { result } = sampled;
    figures.push(
      `attack 3: refused in ${result.api60k.toFixed(0)} ms (api, 60 KB), ${result.keys20k.toFixed(0)} ms ` +
        `(api, 20,000 keys, after a thread was replaced), ${result.worker60k.toFixed(0)} ms (the gateway's tool ` +
        'through ctx.callTool in a worker, with the parent task)',
    );
    expectResponsive(sampled);
    expect(result.child['content']).to.deep.equal([
      {
        type: 'text',
        text: "refused: Invalid arguments for tool 'a_slow': validating them took more than SCHEMA_VALIDATION_TIMEOUT_MS (1000)",
      },
    ]);
    // A schema thread was replaced, and is back: the same tools validate short arguments.
    await expectRpcError(
      client.call('tools/call', { name: 'slow_pattern', arguments: { s: 'b' }, task: {} }),
      -32602,
      `Invalid arguments for tool 'slow_pattern': s: must match pattern "(?:a|aa|aaa){1000}$"`,
    );
    expect(api.records().some((r) => r['message'] === 'schema thread over its deadline: replaced')).to.equal(true);
    await echo();
    expectAlive();
  });

  it('attack 4: a publisher of 1,000 tools whose names sort first, and an upstream listing 1,000 more, crowd out no other tool', async () => {
    const flood = Array.from({ length: 1000 }, (_, i) => `aaa_${String(i).padStart(4, '0')}`);
    const sampled = await whileSampling('attack 4', async () => {
      const started = performance.now();
      await publishRaw(
        // Tools of the runner's own queues: external ones would have every worker listen to 500 more queues.
        flood.map((name) => [
          name,
          JSON.stringify({ ...entry(name, { type: 'object' }), queue: `tool-${name}`, external: false }),
        ]),
        'flood-writer',
      );
      await eventually(async () => ((await listed()).includes('aaa_0499') ? true : undefined), 30_000, 10);
      return performance.now() - started;
    });
    figures.push(`attack 4: 1,000 entries read, 500 kept, ${sampled.result.toFixed(0)} ms after publishing`);
    expectResponsive(sampled);
    const names = await listed();
    expect(names).to.include.members(['echo', 'call_with', 'a_ping', 'a_slow', 'aa_0194']);
    expect(names.filter((name) => name.startsWith('aaa_'))).to.have.length(500);
    // The upstream's tools are a publisher of their own, beside the worker's own tools.
    const workerName = String(worker.records().find((r) => r['message'] === 'worker ready')?.['worker']);
    expect(await system.redis.hmget(`${system.prefix}:catalog:publishers`, 'a_ping', 'echo')).to.deep.equal([
      `${workerName}/hostile`,
      workerName,
    ]);
    const { refusedTools } = await overviewOf(system);
    expect(refusedTools.find((r) => r.tool === 'aaa_0500')).to.deep.equal({
      tool: 'aaa_0500',
      publisher: 'flood-writer',
      reason:
        "its publisher 'flood-writer' publishes more than CATALOG_MAX_TOOLS_PER_PUBLISHER (500) tools; its first 500 by name are read",
    });
    await echo();
    expect((await client.call('tools/call', { name: 'a_ping', arguments: {} }))['content']).to.deep.equal([
      { type: 'text', text: 'pong' },
    ]);
    expect(refusedTools.find((r) => r.tool === 'aa_0200')?.reason).to.equal(
      'its upstream lists more than maxTools (200) tools; the first 200 by name are published',
    );
    expectAlive();
  });

  it('attack 5: three list_changed of the upstream listing all of these: the worker judges and compiles nothing again and keeps answering', async () => {
    const listings = () => worker.records().filter((r) => r['message'] === 'upstream tools listed').length;
    const told = ['upstream tool left out: the tool catalog would refuse it', 'upstream tools left out'];
    const leftOut = () => worker.records().filter((r) => told.includes(String(r['message']))).length;
    const [before, toldBefore] = [listings(), leftOut()];
    const sampled = await whileSampling('attack 5', async () => {
      const started = performance.now();
      await client.call('tools/call', { name: 'a_relist', arguments: {} });
      await eventually(() => (listings() >= before + 2 ? true : undefined), 30_000, 10);
      return performance.now() - started;
    });
    figures.push(
      `attack 5: ${listings() - before} relistings of 1,005 tools done ${sampled.result.toFixed(0)} ms after ` +
        'list_changed',
    );
    expectResponsive(sampled);
    expect(leftOut()).to.equal(toldBefore); // nothing judged anew: nothing told again
    expect(worker.records().filter((r) => r['level'] === 'error')).to.deep.equal([]);
    await echo();
    expectAlive();
  });
});

async function overviewOf(
  system: ProcessSystem,
): Promise<{ refusedTools: { tool: string; reason: string; publisher?: string }[] }> {
  let out = '';
  const code = await runCli(['overview', '--json'], {
    out: (text) => (out += text),
    err: () => undefined,
    env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
  });
  expect(code).to.equal(0);
  return JSON.parse(out) as { refusedTools: { tool: string; reason: string; publisher?: string }[] };
}
