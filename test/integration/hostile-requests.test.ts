// Hostile input at the 2026-07-28 wire's trust boundaries (issue 30, finding 6), through api replicas, a worker and
// a redis-server of this file's own, on 127.0.0.1: MRTR requestStates forged, replayed, expired or signed by a
// rotated key, and a key set lost from Redis; calls refused at the owner's cap, which must leave no request context
// in Redis; subscriptions/listen naming unknown task ids, which must spend the failed-lookup budget as tasks/get
// does (T-SEC-3). Every case is bounded: a few dozen requests, no waiting on timers but the recheck of the keys.
import { expect } from 'chai';
import { createHmac, randomUUID } from 'node:crypto';
import { KeySpace } from '@mcp-tasks/engine';
import { eventually } from '../support/mcp-client.ts';
import { modernPost, openStream, WITH_TASKS, type ModernOptions, type ModernReply } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

const PRINCIPALS = ['capped', 'lister', 'mrtr', 'other', 'rotor', 'flusher', 'prober'] as const;
type Principal = (typeof PRINCIPALS)[number];
const KEYS = Object.fromEntries(PRINCIPALS.map((name) => [name, `${name}-${randomUUID()}`])) as Record<
  Principal,
  string
>;
const MAX_TASKS_PER_OWNER = 3;
const FAILED_LOOKUPS = 5;
const ROTATION_MS = 60_000;
const OVERLAP_MS = 90_000;
const RECHECK_MS = 200;
const INVALID_STATE = 'Invalid requestState: not issued for this request, or expired';

describe('hostile input at the 2026-07-28 boundaries: request states, request contexts, listen lookups (api replicas, own Redis)', function () {
  this.timeout(60_000);
  let redisServer: RedisServer;
  let system: System;
  let a: string;
  let b: string;
  /** A third replica, used only after FLUSHALL: it has not read a signing key before (as one started since). */
  let c: string;
  let keys: KeySpace;

  before(async () => {
    redisServer = await startRedisServer();
    system = await startSystem({
      apis: 3,
      redisUrl: redisServer.url,
      env: {
        MCPT_TOOLS: './scripts/conformance/tools.ts',
        AUTH_API_KEYS: PRINCIPALS.map((name) => `${name}:${KEYS[name]}`).join(','),
        MAX_TASKS_PER_OWNER: String(MAX_TASKS_PER_OWNER),
        RATE_LIMIT_FAILED_LOOKUPS: String(FAILED_LOOKUPS),
        // One rate-limit window for the whole file (windows are aligned on the epoch): no count is split in two.
        RATE_LIMIT_WINDOW_MS: String(1e12),
        REQUEST_STATE_KEY_ROTATION_MS: String(ROTATION_MS),
        REQUEST_STATE_KEY_OVERLAP_MS: String(OVERLAP_MS),
        REQUEST_STATE_KEY_RECHECK_MS: String(RECHECK_MS),
        // After FLUSHALL the worker publishes its tools again and the replicas read them soon.
        CATALOG_HEARTBEAT_MS: '200',
        CATALOG_RELOAD_MS: '100',
      },
    });
    [a, b, c] = system.apis.map((api) => api.url) as [string, string, string];
    keys = new KeySpace(system.prefix);
  });
  after(async () => {
    await system?.stop();
    await redisServer?.stop();
  });

  const as = (principal: Principal, options: ModernOptions = {}): ModernOptions => ({
    ...options,
    bearer: KEYS[principal],
  });
  const ask = { capabilities: { elicitation: {} } };

  /** The result of a request that must succeed. */
  async function resultOf(reply: Promise<ModernReply>): Promise<Record<string, unknown>> {
    const { status, body } = await reply;
    if (!body.result) throw new Error(`HTTP ${status} ${JSON.stringify(body)}`);
    return body.result;
  }

  /** A synchronous call's first round: input_required with a requestState. */
  async function firstRound(url: string, principal: Principal, tool: string): Promise<Record<string, unknown>> {
    const round = await resultOf(modernPost(url, 'tools/call', { name: tool, arguments: {} }, as(principal, ask)));
    expect(round['resultType'], JSON.stringify(round)).to.equal('input_required');
    return round;
  }

  function retry(url: string, principal: Principal, tool: string, state: unknown, answers: Record<string, unknown>) {
    return modernPost(
      url,
      'tools/call',
      { name: tool, arguments: {}, inputResponses: answers, requestState: state },
      as(principal, ask),
    );
  }

  const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

  function expectInvalidState(reply: ModernReply, message = INVALID_STATE): void {
    expect(reply.body.error?.code, JSON.stringify(reply.body)).to.equal(-32602);
    expect(reply.body.error?.message).to.equal(message);
  }

  /** A state's parts: `<period>.<generation>.<payload>.<mac>`. */
  function partsOf(token: unknown): { period: number; payload: Record<string, unknown> } {
    const [period, , payload] = String(token).split('.');
    return {
      period: Number(period),
      payload: JSON.parse(Buffer.from(String(payload), 'base64url').toString('utf8')) as Record<string, unknown>,
    };
  }

  /**
   * `payload` signed with the key Redis holds for `period` (one is stored first when there is none), as only someone
   * who can read Redis could sign it.
   */
  async function signedFor(period: number, payload: Record<string, unknown>): Promise<string> {
    const name = keys.requestStateKey(period);
    await system.redis.set(name, `${'0'.repeat(12)}:${Buffer.alloc(32, 7).toString('base64')}`, 'PX', 600_000, 'NX');
    const stored = (await system.redis.get(name)) as string;
    const colon = stored.indexOf(':');
    const signed = `${period}.${stored.slice(0, colon)}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    const mac = createHmac('sha256', Buffer.from(stored.slice(colon + 1), 'base64'))
      .update(signed)
      .digest('base64url');
    return `${signed}.${mac}`;
  }

  describe('MRTR requestState (C26-MRTR-5)', () => {
    const TOOL = 'test_input_required_result_tampered_state';

    it('C26-MRTR-5: forged states are refused with one -32602 on either replica, and the genuine one still resumes the call', async () => {
      const round = await firstRound(a, 'mrtr', TOOL);
      const state = String(round['requestState']);
      const [period, generation, payload, mac] = state.split('.') as [string, string, string, string];
      const claims = { ...partsOf(state).payload, exp: Date.now() + 3_600_000 };
      for (const forged of [
        'garbage',
        '',
        'a.b.c.d',
        'x'.repeat(10_000),
        `${period}.${generation}.${payload}.${mac.slice(0, -2)}${mac.endsWith('A') ? 'BB' : 'AA'}`,
        `${period}.${generation}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${mac}`,
        `${period}.${'f'.repeat(12)}.${payload}.${mac}`,
        `${Number(period) + 1000}.${generation}.${payload}.${mac}`,
        // An earlier version's format (payload.mac), and a key id pointing at nothing.
        `${payload}.${mac}`,
        `0.${generation}.${payload}.${mac}`,
      ]) {
        for (const url of [a, b]) expectInvalidState(await retry(url, 'mrtr', TOOL, forged, {}));
      }
      for (const notText of [42, null, { state }, [state]])
        expectInvalidState(await retry(b, 'mrtr', TOOL, notText, {}));
      const done = await resultOf(retry(b, 'mrtr', TOOL, state, { confirm: accept({ ok: true }) }));
      expect(done['content']).to.deep.equal([{ type: 'text', text: 'confirmed' }]);
    });

    it('C26-MRTR-5: replayed: a state re-attaches its own caller to its waiting call (answers already taken are not applied again), and is refused for another caller or once the call has ended', async () => {
      const tool = 'test_input_required_result_multi_round';
      const round1 = await firstRound(a, 'mrtr', tool);
      const round2 = await resultOf(retry(b, 'mrtr', tool, round1['requestState'], { step1: accept({ name: 'Ann' }) }));
      expect(round2['inputRequests']).to.have.keys('step2');
      // The first state again, with another answer to step 1: the call waits on step 2, and says so.
      const replayed = await resultOf(
        retry(a, 'mrtr', tool, round1['requestState'], { step1: accept({ name: 'Eve' }) }),
      );
      expect(replayed['resultType']).to.equal('input_required');
      expect(replayed['inputRequests']).to.have.keys('step2');
      expectInvalidState(await retry(a, 'other', tool, round2['requestState'], { step2: accept({ color: 'red' }) }));
      const done = await resultOf(
        retry(b, 'mrtr', tool, replayed['requestState'], { step2: accept({ color: 'red' }) }),
      );
      expect(done['content']).to.deep.equal([{ type: 'text', text: 'Ann likes red' }]);
      for (const state of [round1['requestState'], round2['requestState'], replayed['requestState']]) {
        expectInvalidState(
          await retry(a, 'mrtr', tool, state, { step2: accept({ color: 'blue' }) }),
          'Invalid requestState: the call it resumes has ended',
        );
      }
    });

    it('C26-MRTR-5: expired: a state past its expiry is refused though correctly signed; the same state unexpired resumes the call', async () => {
      const round = await firstRound(b, 'mrtr', TOOL);
      const { period, payload } = partsOf(round['requestState']);
      const expired = await signedFor(period, { ...payload, exp: Date.now() - 1 });
      expectInvalidState(await retry(a, 'mrtr', TOOL, expired, { confirm: accept({ ok: true }) }));
      const later = await signedFor(period, { ...payload, exp: Date.now() + 60_000 });
      const done = await resultOf(retry(a, 'mrtr', TOOL, later, { confirm: accept({ ok: true }) }));
      expect(done['content']).to.deep.equal([{ type: 'text', text: 'confirmed' }]);
    });

    it("C26-MRTR-5: signed by the previous period's key within the overlap: accepted; by a key rotated out past the overlap: refused", async () => {
      const round = await firstRound(a, 'rotor', TOOL);
      const { period, payload } = partsOf(round['requestState']);
      const claims = { ...payload, exp: Date.now() + 60_000 };
      // Three periods back, the key retired (OVERLAP_MS after its period ended) before the current period began.
      const retired = await signedFor(period - 3, claims);
      for (const url of [a, b])
        expectInvalidState(await retry(url, 'rotor', TOOL, retired, { confirm: accept({ ok: true }) }));
      const previous = await signedFor(period - 1, claims);
      const done = await resultOf(retry(b, 'rotor', TOOL, previous, { confirm: accept({ ok: true }) }));
      expect(done['content']).to.deep.equal([{ type: 'text', text: 'confirmed' }]);
    });
  });

  describe('request contexts of refused calls', () => {
    /** The request contexts' hashes, `<prefix>:session:m-<uuid>` (what hangs off one has a further `:<suffix>`). */
    const contextKeys = async () => {
      const context = new RegExp(`^${system.prefix}:session:m-[0-9a-f-]+$`);
      return (await system.redis.keys(`${system.prefix}:session:m-*`)).filter((key) => context.test(key)).sort();
    };

    it("T-RSRC-1: a 2026 call refused at the owner's cap leaves no request context in Redis; an admitted one leaves exactly one", async () => {
      const before = await contextKeys();
      const start = () =>
        modernPost(
          a,
          'tools/call',
          { name: 'slow_compute', arguments: { seconds: 60 } },
          as('capped', { capabilities: WITH_TASKS }),
        );
      const taskIds: string[] = [];
      for (let i = 0; i < MAX_TASKS_PER_OWNER; i++) taskIds.push(String((await resultOf(start()))['taskId']));
      const admitted = await contextKeys();
      expect(admitted.length - before.length).to.equal(MAX_TASKS_PER_OWNER);
      for (let i = 0; i < 20; i++) {
        const refused = await start();
        expect(refused.body.error?.code, JSON.stringify(refused.body)).to.equal(-32000);
        expect(refused.body.error?.message).to.match(/MAX_TASKS_PER_OWNER/);
      }
      expect(await contextKeys()).to.deep.equal(admitted);
      // Each context expires with its task: the same deadline, to the millisecond.
      const [taskTtl, contextTtl] = await Promise.all([
        system.redis.pexpiretime(`${system.prefix}:task:${taskIds[0]}`),
        Promise.all(admitted.filter((key) => !before.includes(key)).map((key) => system.redis.pexpiretime(key))),
      ]);
      expect(contextTtl).to.include(taskTtl);
      for (const taskId of taskIds) {
        await resultOf(modernPost(b, 'tasks/cancel', { taskId }, as('capped', { capabilities: WITH_TASKS })));
      }
    });
  });

  describe('subscriptions/listen with unknown task ids (T-SEC-3)', () => {
    it('T-SEC-3: unknown ids on listen spend the failed-lookup budget as tasks/get misses do; past it, lookups of either kind are refused', async () => {
      const options = as('lister', { capabilities: WITH_TASKS });
      const known = String(
        (await resultOf(modernPost(a, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, options)))[
          'taskId'
        ],
      );
      const unknown = Array.from({ length: 10 }, () => randomUUID());
      const stream = await openStream(
        b,
        'subscriptions/listen',
        { notifications: { taskIds: [known, ...unknown] } },
        options,
      );
      const ack = await stream.next();
      stream.close();
      expect((ack['params'] as { notifications: unknown }).notifications).to.deep.equal({ taskIds: [known] });
      // Probing stopped once the budget was spent: FAILED_LOOKUPS misses were counted, not ten.
      const buckets = await system.redis.keys(`${system.prefix}:rate:failed-lookups-principal:*:principal:key:lister`);
      const counted = await Promise.all(buckets.map((key) => system.redis.get(key)));
      expect(counted.map(Number).reduce((sum, count) => sum + count, 0)).to.equal(FAILED_LOOKUPS);
      const get = await modernPost(a, 'tasks/get', { taskId: known }, options);
      expect(get.body.error?.code, JSON.stringify(get.body)).to.equal(-32000);
      expect(get.body.error?.message).to.match(/lookups of unknown task ids by this requestor/);
      const listen = await modernPost(b, 'subscriptions/listen', { notifications: { taskIds: [known] } }, options);
      expect(listen.body.error?.code, JSON.stringify(listen.body)).to.equal(-32000);
      // A listen that names no task is not a lookup: still served.
      const tools = await openStream(a, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, options);
      expect((await tools.next())['method']).to.equal('notifications/subscriptions/acknowledged');
      tools.close();
    });
  });

  describe('edges (issue 37)', () => {
    it('T-SEC-3: a task id that names another key of a task (<id>:children, :durable, :inputs) is not found like an unknown id, and spends a failed lookup, without an error', async () => {
      const options = as('prober', { capabilities: WITH_TASKS });
      const created = await resultOf(
        modernPost(a, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, options),
      );
      const id = String(created['taskId']);
      // The keys a parent with children and durable state has beside its record.
      await system.redis.sadd(`${system.prefix}:task:${id}:children`, randomUUID());
      await system.redis.hset(`${system.prefix}:task:${id}:durable`, 'checkpoint', '{}');
      await system.redis.sadd(`${system.prefix}:task:${id}:inputs`, 'i-1');
      const unknown = (await modernPost(a, 'tasks/get', { taskId: randomUUID() }, options)).body.error;
      expect(unknown?.code).to.equal(-32602);
      for (const suffix of [':children', ':durable', ':inputs']) {
        const reply = await modernPost(b, 'tasks/get', { taskId: `${id}${suffix}` }, options);
        expect(reply.body.error, suffix).to.deep.equal(unknown);
      }
      const buckets = await system.redis.keys(`${system.prefix}:rate:failed-lookups-principal:*:principal:key:prober`);
      const counted = await Promise.all(buckets.map((key) => system.redis.get(key)));
      expect(counted.map(Number).reduce((sum, count) => sum + count, 0)).to.equal(4);
      const errors = system.apis.flatMap((api) => api.records()).filter((record) => record['level'] === 'error');
      expect(errors.map((record) => record['message'])).to.deep.equal([]);
    });
  });

  describe('a signing key set lost from Redis', () => {
    const TOOL = 'test_input_required_result_tampered_state';

    /**
     * A round on `from` and its retry on `to`, retried with the same state until `to` accepts it (within `withinMs`):
     * a refused retry leaves the call waiting, unchanged.
     */
    async function crossReplica(from: string, to: string, withinMs = 0): Promise<void> {
      const round = await firstRound(from, 'flusher', TOOL);
      const done = await eventually(async () => {
        const reply = await retry(to, 'flusher', TOOL, round['requestState'], { confirm: accept({ ok: true }) });
        if (reply.body.result || withinMs === 0) return reply;
        expectInvalidState(reply);
        return undefined;
      }, withinMs);
      expect(done.body.result?.['content'], JSON.stringify(done.body)).to.deep.equal([
        { type: 'text', text: 'confirmed' },
      ]);
    }

    it('C26-MRTR-5: after FLUSHALL, a replica that had read no key and the two that held the lost one agree on a new key within the recheck time, none restarted', async () => {
      await crossReplica(a, b);
      await crossReplica(b, a);
      await system.redis.flushall();
      // A replica that reads the keys for the first time now (as one started since, or restarted) creates the new
      // key the first time it signs.
      const fresh = c;
      // Wait for the worker's next heartbeat to publish the tool again. A replica's listing is no sign of it: right
      // after FLUSHALL it still shows its cache of the lost catalog, and a reload a moment later empties it.
      await eventually(
        async () => ((await system.redis.zscore(keys.catalogSeen(), TOOL)) === null ? undefined : true),
        10_000,
      );
      // Before the keys were re-read, the replicas that held the lost key refused the new one's states for good.
      for (const [from, to] of [
        [fresh, a],
        [fresh, b],
        [a, fresh],
        [b, fresh],
        [a, b],
      ] as const) {
        await crossReplica(from, to, 10 * RECHECK_MS);
      }
    });
  });
});
