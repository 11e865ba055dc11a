// Idempotency keys of tools/call (docs/durable-execution.md, "Idempotency keys") on two api replicas, with a real
// worker (in the test's process), real Redis and real HTTP: the same key twice gives one task (and one job) on both
// wires, across replicas and at once; another call under the key is refused with -32602; keys are per principal, bounded in
// length and in number, live as long as their task, and mean nothing on a call that is not a task.
import { expect } from 'chai';
import { runCli } from '@mcp-tasks/cli';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import { RunnerMeta } from '@mcp-tasks/protocol';
import { eventually, expectRpcError, McpTestClient, sleep } from '../support/mcp-client.ts';
import { modernPost, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef0';

describe('idempotency keys of tools/call (2 api replicas, 1 worker)', function () {
  this.timeout(60_000);
  let system: System;
  let keyCount = 0;
  /** A fresh key per test: keys live as long as their task, which outlives the test. */
  const newKey = () => `key-${process.pid}-${++keyCount}`;

  before(async () => {
    system = await startSystem({
      apis: 2,
      workers: 1,
      env: { AUTH_API_KEYS: `alice:${ALICE},bob:${BOB}`, IDEMPOTENCY_KEYS_PER_PRINCIPAL: '20' },
    });
  });
  after(async () => {
    await system?.stop();
  });

  async function legacy(bearer = ALICE, replica = 0): Promise<McpTestClient> {
    const client = new McpTestClient(system.apis[replica]?.url ?? system.apiUrl);
    client.headers = { authorization: `Bearer ${bearer}` };
    await client.initialize();
    return client;
  }

  /** A task-augmented tools/call on 2025-11-25 with the key in the header: the task it answers. */
  async function legacyCall(client: McpTestClient, key: string, args: Record<string, unknown> = { seconds: 0.3 }) {
    const result = await client.call(
      'tools/call',
      { name: 'wait', arguments: args, task: {} },
      { headers: { 'idempotency-key': key } },
    );
    return result['task'] as Record<string, unknown>;
  }

  /** A tools/call on 2026-07-28 declaring the tasks extension, through `replica`: the reply. */
  function modernCall(key: string, options: { replica?: number; args?: Record<string, unknown>; meta?: boolean } = {}) {
    const url = system.apis[options.replica ?? 0]?.url ?? system.apiUrl;
    const params = { name: 'wait', arguments: options.args ?? { seconds: 0.3 } };
    return modernPost(url, 'tools/call', params, {
      capabilities: WITH_TASKS,
      bearer: ALICE,
      // For clients that cannot set headers: the key in the request's _meta, beside the revision's own keys.
      ...(options.meta
        ? { meta: modernMeta({ [RunnerMeta.IdempotencyKey]: key }) }
        : { headers: { 'idempotency-key': key } }),
    });
  }

  const modernMeta = (extra: Record<string, unknown>) => ({
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
    'io.modelcontextprotocol/clientInfo': { name: 'idempotency-test', version: '1.0.0' },
    ...extra,
  });

  /** How many tasks the principal's index lists (tasks/list's). */
  async function recordsOf(owner: string): Promise<number> {
    return system.redis.zcard(`${system.prefix}:owner:${owner}`);
  }

  const reusedLines = () =>
    system.apis.flatMap((api) => api.records().filter((line) => line['event'] === 'task.reused'));

  it('T-CREATE-1: the same Idempotency-Key twice on 2025-11-25 answers the same task, from either replica; one record, one job', async () => {
    const before = await recordsOf('principal:key:alice');
    const key = newKey();
    const first = await legacyCall(await legacy(ALICE, 0), key);
    const again = await legacyCall(await legacy(ALICE, 1), key);
    expect(again['taskId']).to.equal(first['taskId']);
    expect(await recordsOf('principal:key:alice')).to.equal(before + 1);
    const client = await legacy();
    const done = await client.call(
      'tasks/result',
      { taskId: first['taskId'] },
      { headers: { accept: 'application/json' } },
    );
    expect(done['content']).to.be.an('array');
    // A retry after the end answers the task as it is now: completed, no second run.
    const late = await legacyCall(client, key);
    expect(late).to.include({ taskId: first['taskId'], status: 'completed' });
    const settled = system.workers[0]
      ?.records()
      .filter((line) => line['message'] === 'task settled' && line['taskId'] === first['taskId']);
    expect(settled).to.have.length(1);
    expect(reusedLines().filter((line) => line['taskId'] === first['taskId'])).to.have.length(2);
  });

  it('X-RES-1: the same Idempotency-Key twice on 2026-07-28 answers the same task; in _meta as in the header; and one task whichever wire', async () => {
    const key = newKey();
    const first = await modernCall(key, { replica: 0 });
    expect(first.body.result?.['resultType']).to.equal('task');
    const again = await modernCall(key, { replica: 1, meta: true });
    expect(again.body.result?.['taskId']).to.equal(first.body.result?.['taskId']);
    // The same principal on the other wire, same key and call: the same task.
    const legacyTask = await legacyCall(await legacy(ALICE, 1), key);
    expect(legacyTask['taskId']).to.equal(first.body.result?.['taskId']);
  });

  it('decided atomically: the same key sent to both replicas at once starts one task', async () => {
    const key = newKey();
    const [a, b] = await Promise.all([legacy(ALICE, 0), legacy(ALICE, 1)]);
    const tasks = await Promise.all([
      ...Array.from({ length: 4 }, () => legacyCall(a, key)),
      ...Array.from({ length: 4 }, () => legacyCall(b, key)),
    ]);
    expect(new Set(tasks.map((task) => task['taskId'])).size).to.equal(1);
  });

  it('the same key with other arguments (or another tool) is refused with -32602 saying so, on both wires', async () => {
    const key = newKey();
    const client = await legacy();
    const first = await legacyCall(client, key, { seconds: 0.1 });
    const refused = await expectRpcError(legacyCall(client, key, { seconds: 0.2 }), -32602);
    expect(refused.message).to.include(
      `Idempotency-Key '${key}' was used for another call (task ${String(first['taskId'])}): a retry must repeat the same tool and arguments`,
    );
    const other = await client
      .call(
        'tools/call',
        { name: 'count_primes', arguments: { below: 10 }, task: {} },
        { headers: { 'idempotency-key': key } },
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(String(other)).to.match(/-32602: Idempotency-Key .* was used for another call/);
    // A schema default is part of the call: leaving out what the default fills in is the same call.
    const key2 = newKey();
    const once = (args: Record<string, unknown>) =>
      client.call('tools/call', { name: 'once', arguments: args, task: {} }, { headers: { 'idempotency-key': key2 } });
    const withDefault = (await once({ ref: 'r-1' }))['task'] as Record<string, unknown>;
    expect(((await once({ ref: 'r-1', seconds: 0 }))['task'] as Record<string, unknown>)['taskId']).to.equal(
      withDefault['taskId'],
    );
    const modern = await modernCall(key, { args: { seconds: 0.3 } });
    expect(modern.body.error?.code).to.equal(-32602);
    expect(modern.body.error?.message).to.match(/was used for another call/);
  });

  it("keys are the principal's own: bob's call under alice's key starts a task of his", async () => {
    const key = newKey();
    const alice = await legacyCall(await legacy(ALICE), key);
    const bob = await legacyCall(await legacy(BOB), key);
    expect(bob['taskId']).to.not.equal(alice['taskId']);
  });

  it('a key lives as long as its task: once the task has expired, the key starts a new one', async () => {
    const key = newKey();
    const client = await legacy();
    const short = await client.call(
      'tools/call',
      { name: 'wait', arguments: { seconds: 0 }, task: { ttl: 1000 } },
      { headers: { 'idempotency-key': key } },
    );
    await sleep(1100);
    const next = await legacyCall(client, key, { seconds: 0 });
    expect(next['taskId']).to.not.equal((short['task'] as Record<string, unknown>)['taskId']);
  });

  it('a key whose task was deleted before its expiry (an operator purged it) starts a new task', async () => {
    const key = newKey();
    const client = await legacy();
    const first = await legacyCall(client, key, { seconds: 0 });
    await client.call('tasks/result', { taskId: first['taskId'] }, { headers: { accept: 'application/json' } });
    const store = new TaskStore(system.redis, new KeySpace(system.prefix));
    const record = await store.get(String(first['taskId']));
    if (!record) throw new Error('no record');
    await store.delete(record);
    const next = await legacyCall(client, key, { seconds: 0 });
    expect(next['taskId']).to.not.equal(first['taskId']);
    expect((await legacyCall(client, key, { seconds: 0 }))['taskId']).to.equal(next['taskId']);
  });

  it('bounds: a key longer than IDEMPOTENCY_KEY_MAX_LENGTH, empty or not printable, or two different keys, is refused; the oldest keys give way past IDEMPOTENCY_KEYS_PER_PRINCIPAL', async () => {
    const client = await legacy(BOB);
    for (const bad of ['x'.repeat(256), '""']) {
      await expectRpcError(legacyCall(client, bad), -32602, /Invalid Idempotency-Key: use 1 to 255 printable ASCII/);
    }
    const twice = client.call(
      'tools/call',
      { name: 'wait', arguments: { seconds: 0 }, task: {}, _meta: { [RunnerMeta.IdempotencyKey]: 'b' } },
      { headers: { 'idempotency-key': 'a' } },
    );
    await expectRpcError(twice, -32602, /name different keys/);
    // A Structured Field string is the key between its quotes.
    const quoted = await legacyCall(client, '"sf-1"');
    expect((await legacyCall(client, 'sf-1'))['taskId']).to.equal(quoted['taskId']);

    const oldest = newKey();
    const first = await legacyCall(client, oldest, { seconds: 0 });
    for (let i = 0; i < 20; i++) await legacyCall(client, newKey(), { seconds: 0 });
    expect(await system.redis.zcard(`${system.prefix}:idempotency-order:principal:key:bob`)).to.equal(20);
    const again = await legacyCall(client, oldest, { seconds: 0 });
    expect(again['taskId']).to.not.equal(first['taskId']);
  });

  it('edges: after mcpt purge deleted its task, the key is gone: a call under it with other arguments starts a new task', async () => {
    const key = newKey();
    const client = await legacy();
    const first = await legacyCall(client, key, { seconds: 0 });
    await client.call('tasks/result', { taskId: first['taskId'] }, { headers: { accept: 'application/json' } });
    let out = '';
    let err = '';
    const code = await runCli(['purge', '--older-than', '1ms', '--yes', '--json'], {
      out: (chunk) => (out += chunk),
      err: (chunk) => (err += chunk),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    expect(code, err).to.equal(0);
    expect((JSON.parse(out) as { taskIds: string[] }).taskIds).to.include(first['taskId']);
    const other = await legacyCall(client, key, { seconds: 0.1 });
    expect(other['taskId']).to.not.equal(first['taskId']);
    // The key now names the new task, for its own call only.
    expect((await legacyCall(client, key, { seconds: 0.1 }))['taskId']).to.equal(other['taskId']);
    await expectRpcError(legacyCall(client, key, { seconds: 0 }), -32602, /was used for another call \(task /);
  });

  it('a key on a call that is not a task means nothing: two plain calls under one key run twice', async () => {
    const client = await legacy();
    const key = newKey();
    const plain = () =>
      client.call(
        'tools/call',
        { name: 'wait', arguments: { seconds: 0 } },
        { headers: { 'idempotency-key': key, accept: 'application/json' } },
      );
    await plain();
    await plain();
    const created = await eventually(() => {
      const lines = system.apis.flatMap((api) =>
        api.records().filter((line) => line['event'] === 'task.created' && line['kind'] === 'call'),
      );
      return lines.length >= 2 ? lines : undefined;
    });
    expect(created.length).to.be.at.least(2);
    expect(await system.redis.hexists(`${system.prefix}:idempotency:principal:key:alice`, key)).to.equal(0);
  });
});
