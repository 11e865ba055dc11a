// Hostile input at the 2026-07-28 wire's trust boundaries (issue 30, finding 6), through api replicas, a worker and
// a redis-server of this file's own, on 127.0.0.1: calls refused at the owner's cap, which must leave no request
// context in Redis; subscriptions/listen naming unknown task ids, which must spend the failed-lookup budget as
// tasks/get does (T-SEC-3). Every case is bounded: a few dozen requests, no waiting on timers.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { modernPost, openStream, WITH_TASKS, type ModernOptions, type ModernReply } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/processes.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

const PRINCIPALS = ['capped', 'lister'] as const;
type Principal = (typeof PRINCIPALS)[number];
const KEYS = Object.fromEntries(PRINCIPALS.map((name) => [name, `${name}-${randomUUID()}`])) as Record<
  Principal,
  string
>;
const MAX_TASKS_PER_OWNER = 3;
const FAILED_LOOKUPS = 5;

describe('hostile input at the 2026-07-28 boundaries: request contexts, listen lookups (api replicas, own Redis)', function () {
  this.timeout(60_000);
  let redisServer: RedisServer;
  let system: System;
  let a: string;
  let b: string;

  before(async () => {
    redisServer = await startRedisServer();
    system = await startSystem({
      apis: 2,
      redisUrl: redisServer.url,
      env: {
        MCPT_TOOLS: './scripts/conformance/tools.ts',
        AUTH_API_KEYS: PRINCIPALS.map((name) => `${name}:${KEYS[name]}`).join(','),
        MAX_TASKS_PER_OWNER: String(MAX_TASKS_PER_OWNER),
        RATE_LIMIT_FAILED_LOOKUPS: String(FAILED_LOOKUPS),
        // One rate-limit window for the whole file (windows are aligned on the epoch): no count is split in two.
        RATE_LIMIT_WINDOW_MS: String(1e12),
      },
    });
    [a, b] = system.apis.map((api) => api.url) as [string, string];
  });
  after(async () => {
    await system?.stop();
    await redisServer?.stop();
  });

  const as = (principal: Principal, options: ModernOptions = {}): ModernOptions => ({
    ...options,
    bearer: KEYS[principal],
  });

  /** The result of a request that must succeed. */
  async function resultOf(reply: Promise<ModernReply>): Promise<Record<string, unknown>> {
    const { status, body } = await reply;
    if (!body.result) throw new Error(`HTTP ${status} ${JSON.stringify(body)}`);
    return body.result;
  }

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
});
