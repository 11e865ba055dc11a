// Hostile catalog entries and arguments (issue 30; docs/security.md, "Trust boundaries"; docs/catalog.md, "Bounds"):
// each entry goes through the real publish path (Redis, as docs/job-contract.md tells a consumer to publish, or a
// worker's publish script) to a real api and worker, and none may crash or stall them. Bounded: a few dozen entries,
// a few hundred calls, all on 127.0.0.1.
import { expect } from 'chai';
import { runCli } from '@mcp-tasks/cli';
import { closeRedis, createEngine, createRedis } from '@mcp-tasks/engine';
import { eventually, expectRpcError, McpTestClient, sleep } from '../support/mcp-client.ts';
import { spawnWorker, startSystem, type ChildHandle, type System } from '../support/processes.ts';

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
  function refusalLogs(child: ChildHandle, tool: string): Record<string, unknown>[] {
    return child.records().filter((r) => r['message'] === 'tool catalog entry refused' && r['tool'] === tool);
  }

  function alive(child: ChildHandle): boolean {
    return child.process.exitCode === null && child.process.signalCode === null;
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
    const generous = await spawnWorker({
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
