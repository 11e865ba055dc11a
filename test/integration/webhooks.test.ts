// Webhook deliveries on a real Redis with real HTTP receivers (docs/webhooks.md): what a transition queues and what
// it costs, the delivery loop's order, retries and refusals, the bounds, and what operators see. The delivery loop
// runs in this process here; test/integration/webhooks-processes.test.ts runs it in worker processes it kills.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  closeRedis,
  createEngine,
  createLogger,
  createRedis,
  WebhookDelivery,
  type Engine,
  type TaskInspection,
} from '@mcp-tasks/engine';
import { runCli } from '@mcp-tasks/cli';
import { TaskStatus, type TaskRecord, type WebhookTarget } from '@mcp-tasks/protocol';
import { commandsDuring } from '../support/command-stats.ts';
import { eventually } from '../support/mcp-client.ts';
import { startRedisServer, type RedisServer, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const OWNER = 'principal:key:alice';
const RESULT = { content: [{ type: 'text', text: 'done' }] };

describe('webhooks: deliveries queued by transitions, sent by the delivery loop (real Redis, real HTTP)', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let inspect: Redis;
  let receiver: WebhookReceiver;
  const releases: (() => Promise<void>)[] = [];

  before(async () => {
    server = await startRedisServer();
    inspect = new Redis(server.url, { maxRetriesPerRequest: null });
    releases.push(track('webhooks inspect', () => inspect.disconnect()));
    receiver = await startWebhookReceiver(SECRET);
    releases.push(() => receiver.close());
  });
  after(async () => {
    for (const release of releases.reverse()) await release();
    await server?.stop();
  });
  beforeEach(() => {
    receiver.mode = 'ok';
  });

  /** An engine on its own connections (and prefix), with these webhook settings, and optionally its delivery loop. */
  async function open(
    settings: Record<string, string | number> = {},
    withLoop = true,
  ): Promise<{ engine: Engine; loop?: WebhookDelivery; close: () => Promise<void> }> {
    const redis = createRedis(server.url, 'webhooks');
    const subscriber = createRedis(server.url, 'webhooks-sub');
    const engine = createEngine(
      { redis, subscriber },
      {
        REDIS_PREFIX: `{${uniquePrefix()}}`,
        SESSION_IDLE_TTL_MS: 60_000,
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_ALLOWED_TARGETS: '127.0.0.1',
        WEBHOOK_BACKOFF_MS: 30,
        WEBHOOK_BACKOFF_MAX_MS: 120,
        WEBHOOK_TIMEOUT_MS: 1000,
        WEBHOOK_POLL_MS: 50,
        ...settings,
      },
    );
    const loop = withLoop
      ? new WebhookDelivery(engine.store, engine.events, engine.subscriber, engine.keys, {
          worker: 'test-worker',
          settings: engine.webhooks,
          log: createLogger({ service: 'test', level: 'error', format: 'json' }),
        })
      : undefined;
    await loop?.start();
    const close = track('webhooks engine', async () => {
      await loop?.stop();
      await engine.close();
      await closeRedis(subscriber);
      await closeRedis(redis);
    });
    releases.push(close);
    return { engine, ...(loop ? { loop } : {}), close };
  }

  const create = (engine: Engine, webhook?: WebhookTarget, ttl = 60_000) =>
    engine.tasks.create({
      kind: 'task',
      owner: OWNER,
      sessionId: `s-${randomUUID()}`,
      tool: 'wait',
      arguments: {},
      retrySafe: true,
      requestedTtl: ttl,
      ...(webhook ? { webhook } : {}),
    });
  const complete = (engine: Engine, task: TaskRecord) =>
    engine.store.transition(task, TaskStatus.Completed, { outcome: { result: RESULT }, statusMessage: 'all done' });
  const hook = (path: string, events: WebhookTarget['events'] = 'terminal'): WebhookTarget => ({
    url: `${receiver.url}/${path}`,
    events,
  });
  const requestsTo = (path: string) => receiver.requests.filter((request) => request.path === `/${path}`);
  const inspection = async (engine: Engine, taskId: string) =>
    (await engine.admin.inspect(taskId)) as TaskInspection & { webhook: NonNullable<TaskInspection['webhook']> };

  it('a task without a webhook costs no Redis command more to move than before webhooks (INFO commandstats)', async () => {
    const { engine } = await open({}, false);
    const warm = await create(engine);
    await complete(engine, warm);
    const task = await create(engine);
    const total = (calls: Record<string, number>) => Object.values(calls).reduce((sum, n) => sum + n, 0);
    // The counts main had before webhooks (git 3885a27), measured the same way: a note, an input request, the end.
    const note = await commandsDuring(inspect, () => engine.store.note(task, TaskStatus.Working, 'step 1'));
    expect(total(note), JSON.stringify(note)).to.equal(7);
    const input = await commandsDuring(inspect, () =>
      engine.store.transition(task, TaskStatus.InputRequired, { input: { requestId: 'r1', delta: 1 } }),
    );
    expect(total(input), JSON.stringify(input)).to.equal(12);
    const ended = await commandsDuring(inspect, () =>
      engine.store.transition(task, TaskStatus.Completed, { outcome: { result: RESULT } }),
    );
    expect(total(ended), JSON.stringify(ended)).to.equal(9);
    for (const calls of [note, input, ended]) {
      expect(calls['rpush'] ?? 0).to.equal(0);
      expect(calls['llen'] ?? 0).to.equal(0);
    }
    // With a webhook (terminal changes only): the note and the input request cost the same; the end queues its
    // delivery in the same script: RPUSH, PEXPIREAT, ZADD and PUBLISH.
    const hooked = await create(engine, hook('cost'));
    const hookedNote = await commandsDuring(inspect, () => engine.store.note(hooked, TaskStatus.Working, 'step 1'));
    expect(hookedNote).to.deep.equal(note);
    const hookedEnd = await commandsDuring(inspect, () =>
      engine.store.transition(hooked, TaskStatus.Completed, { outcome: { result: RESULT } }),
    );
    expect(hookedEnd['evalsha']).to.equal(1);
    expect(total(hookedEnd) - 9, JSON.stringify(hookedEnd)).to.equal(4);
    expect(hookedEnd['rpush']).to.equal(1);
    expect(await engine.store.webhooks.pendingTasks()).to.equal(1);
  });

  it('the terminal change is delivered once, signed (standardwebhooks verifies it), its body the task as 2026-07-28 tasks/get renders it', async () => {
    const { engine } = await open();
    const task = await create(engine, hook('once'));
    await engine.store.note(task, TaskStatus.Working, 'halfway');
    const moved = await complete(engine, task);
    const [delivery] = await eventually(() => (requestsTo('once').length > 0 ? requestsTo('once') : undefined));
    const lastUpdatedAt = moved.ok ? moved.lastUpdatedAt : 0;
    expect(delivery?.verified).to.equal(true);
    expect(delivery?.id).to.equal(`${task.taskId}_${lastUpdatedAt}`);
    expect(delivery?.body).to.deep.include({
      resultType: 'complete',
      taskId: task.taskId,
      status: 'completed',
      statusMessage: 'all done',
      lastUpdatedAt: new Date(lastUpdatedAt).toISOString(),
      result: { resultType: 'complete', ...RESULT },
    });
    const seen = await eventually(async () => {
      const view = (await inspection(engine, task.taskId)).webhook;
      return view.attempts.length > 0 && view.pending.length === 0 ? view : undefined;
    });
    expect(seen).to.deep.include({ url: `${receiver.url}/once`, events: 'terminal', pending: [], dropped: 0 });
    expect(seen.attempts).to.have.length(1);
    expect(seen.attempts[0]).to.deep.include({ outcome: 'delivered', code: 204, attempt: 1, worker: 'test-worker' });
    expect(await engine.store.webhooks.outcomes()).to.deep.include({ delivered: 1, failed: 0 });
    expect(await engine.store.webhooks.pendingTasks()).to.equal(0);
    // Only that one: the note was not a change of status.
    expect(requestsTo('once')).to.have.length(1);
  });

  it("events 'all': every change of status in order, each retried with its own webhook-id across 503s and resets", async () => {
    const { engine } = await open();
    receiver.mode = 'fail';
    const task = await create(engine, hook('all', 'all'));
    const changes: number[] = [];
    const at = (moved: Awaited<ReturnType<Engine['store']['transition']>>) => {
      if (moved.ok) changes.push(moved.lastUpdatedAt);
    };
    at(await engine.store.transition(task, TaskStatus.InputRequired, { input: { requestId: 'q1', delta: 1 } }));
    await engine.store.note(task, TaskStatus.InputRequired, 'still asking'); // not a change of status
    at(await engine.store.transition(task, TaskStatus.Working, { input: { requestId: 'q1', delta: -1 } }));
    at(await complete(engine, task));
    await eventually(() => (requestsTo('all').length >= 3 ? true : undefined));
    receiver.mode = 'down';
    const before = requestsTo('all').length;
    await eventually(() => (requestsTo('all').length >= before + 2 ? true : undefined));
    receiver.mode = 'ok';
    await eventually(() => (receiver.delivered().filter((r) => r.path === '/all').length === 3 ? true : undefined));
    const delivered = receiver.delivered().filter((request) => request.path === '/all');
    expect(delivered.map((request) => request.id)).to.deep.equal(changes.map((ms) => `${task.taskId}_${ms}`));
    expect(delivered.map((request) => request.body?.['status'])).to.deep.equal([
      'input_required',
      'working',
      'completed',
    ]);
    // In order: no request for a later change came before the earlier one was taken.
    const requests = requestsTo('all');
    for (const [i, request] of delivered.entries()) {
      const taken = requests.indexOf(request);
      const later = requests.findIndex((r) => delivered.slice(i + 1).some((d) => d.id === r.id));
      if (later >= 0) expect(later, `${request.id} before the later changes`).to.be.greaterThan(taken);
    }
    // The first delivery was tried several times, always with its own id and a fresh signature.
    const first = requests.filter((request) => request.id === delivered[0]?.id);
    expect(first.length).to.be.at.least(3);
    expect(requests.every((r) => r.verified || r.answer === 'reset')).to.equal(true);
    const view = (await inspection(engine, task.taskId)).webhook;
    expect(view.attempts.filter((a) => a.outcome === 'failed').length).to.be.at.least(2);
    expect(view.attempts.some((a) => a.error?.includes('HTTP 503'))).to.equal(true);
    expect(view.attempts.filter((a) => a.outcome === 'delivered')).to.have.length(3);
  });

  it('a 4xx answer or a redirect is not retried (nor followed): the delivery is given up, and says why', async () => {
    const { engine } = await open();
    receiver.mode = { status: 410 };
    const gone = await create(engine, hook('gone'));
    await complete(engine, gone);
    const view = await eventually(async () => {
      const current = (await inspection(engine, gone.taskId)).webhook;
      return current.attempts.length > 0 && current.pending.length === 0 ? current : undefined;
    });
    expect(view.attempts).to.have.length(1);
    expect(view.attempts[0]).to.deep.include({ outcome: 'abandoned', code: 410 });
    receiver.mode = { status: 302, headers: { location: `${receiver.url}/elsewhere` } };
    const moved = await create(engine, hook('moved'));
    await complete(engine, moved);
    const redirected = await eventually(async () => {
      const current = (await inspection(engine, moved.taskId)).webhook;
      return current.attempts.length > 0 && current.pending.length === 0 ? current : undefined;
    });
    expect(redirected.attempts[0]?.error).to.match(/redirects are not followed/);
    expect(requestsTo('elsewhere')).to.have.length(0);
    expect(await engine.store.webhooks.outcomes()).to.deep.include({ abandoned: 2 });
  });

  it('retries stop at WEBHOOK_MAX_ATTEMPTS; a task past its outbox bound (WEBHOOK_MAX_PENDING) keeps its terminal delivery', async () => {
    const { engine } = await open({ WEBHOOK_MAX_ATTEMPTS: 3, WEBHOOK_MAX_PENDING: 2 });
    receiver.mode = 'fail';
    const task = await create(engine, hook('bounded'));
    await complete(engine, task);
    const view = await eventually(async () => {
      const current = (await inspection(engine, task.taskId)).webhook;
      return current.pending.length === 0 && current.attempts.length > 0 ? current : undefined;
    });
    expect(view.attempts.map((a) => a.outcome)).to.deep.equal(['failed', 'failed', 'abandoned']);
    expect(view.attempts[2]?.error).to.match(/3 attempts made \(WEBHOOK_MAX_ATTEMPTS\)/);
    expect(requestsTo('bounded')).to.have.length(3);

    // No loop here: the outbox fills. Two changes of status fit, the next ones are counted as dropped, the end gets in.
    const { engine: idle } = await open({ WEBHOOK_MAX_PENDING: 2 }, false);
    const busy = await create(idle, hook('full', 'all'));
    for (let round = 0; round < 2; round++) {
      await idle.store.transition(busy, TaskStatus.InputRequired, { input: { requestId: `q${round}`, delta: 1 } });
      await idle.store.transition(busy, TaskStatus.Working, { input: { requestId: `q${round}`, delta: -1 } });
    }
    await complete(idle, busy);
    const full = (await inspection(idle, busy.taskId)).webhook;
    expect(full.pending.map((p) => p.status)).to.deep.equal(['input_required', 'working', 'completed']);
    expect(full.dropped).to.equal(2);
  });

  it('mcpt inspect shows the webhook (query values masked), the deliveries left and every attempt, as text and --json', async () => {
    const { engine } = await open({ WEBHOOK_MAX_ATTEMPTS: 2 });
    receiver.mode = 'fail';
    const task = await create(engine, { url: `${receiver.url}/inspected?token=abc123&tag=x`, events: 'terminal' });
    await complete(engine, task);
    await eventually(async () => {
      const view = (await inspection(engine, task.taskId)).webhook;
      return view.attempts.length === 2 ? true : undefined;
    });
    const run = async (...args: string[]) => {
      let out = '';
      let err = '';
      const code = await runCli(args, {
        out: (text) => (out += text),
        err: (text) => (err += text),
        env: { REDIS_URL: server.url, REDIS_PREFIX: engine.keys.prefix },
      });
      expect(code, err).to.equal(0);
      return out;
    };
    const text = await run('inspect', task.taskId);
    expect(text).to.match(
      /^webhook\s+http:\/\/127\.0\.0\.1:\d+\/inspected\?token=\*\*\*&tag=\*\*\* \(terminal changes\)$/m,
    );
    expect(text).to.match(/^deliveries left\s+none$/m);
    expect(text).to.include('Webhook attempts:');
    expect(text).to.match(new RegExp(`${task.taskId}_\\d+\\s+completed\\s+1\\s+failed\\s+HTTP 503: receiver down`));
    expect(text).to.match(/\s2\s+abandoned\s+HTTP 503: .*given up: 2 attempts made \(WEBHOOK_MAX_ATTEMPTS\)/);
    expect(text).not.to.include('abc123');
    const json = JSON.parse(await run('inspect', task.taskId, '--json')) as {
      webhook: { url: string; pending: unknown[]; attempts: { outcome: string; at: string; worker: string }[] };
    };
    expect(json.webhook.url).not.to.include('abc123');
    expect(json.webhook.pending).to.deep.equal([]);
    expect(json.webhook.attempts.map((a) => a.outcome)).to.deep.equal(['failed', 'abandoned']);
    expect(json.webhook.attempts[0]?.at).to.match(/^\d{4}-\d\d-\d\dT/);
    expect(json.webhook.attempts[0]?.worker).to.equal('test-worker');
  });

  it('a claim whose worker died is delivered again once its lease ends, with the same webhook-id', async () => {
    const { engine } = await open({}, false);
    const task = await create(engine, hook('lease'));
    const moved = await complete(engine, task);
    // A worker claims the task and dies before it settles (its attempt may or may not have reached the receiver).
    const leaseMs = 1500;
    const claimedAt = Date.now();
    expect(await engine.store.webhooks.claim(claimedAt, 10, claimedAt + leaseMs)).to.deep.equal([task.taskId]);
    // Another worker's loop.
    const loop = new WebhookDelivery(engine.store, engine.events, engine.subscriber, engine.keys, {
      worker: 'second-worker',
      settings: engine.webhooks,
      log: createLogger({ service: 'test', level: 'error', format: 'json' }),
    });
    await loop.start();
    releases.push(track('second loop', () => loop.stop()));
    const [delivery] = await eventually(() => (requestsTo('lease').length > 0 ? requestsTo('lease') : undefined));
    expect(delivery?.at).to.be.at.least(claimedAt + leaseMs);
    expect(delivery?.id).to.equal(`${task.taskId}_${moved.ok ? moved.lastUpdatedAt : 0}`);
  });

  it('a task that expires takes its deliveries with it', async () => {
    const { engine } = await open({}, false);
    const task = await create(engine, hook('expired'), 1000);
    await complete(engine, task);
    expect(await engine.store.webhooks.pendingTasks()).to.equal(1);
    await eventually(async () => ((await engine.store.get(task.taskId)) ? undefined : true), 5000);
    const loop = new WebhookDelivery(engine.store, engine.events, engine.subscriber, engine.keys, {
      worker: 'late-worker',
      settings: engine.webhooks,
      log: createLogger({ service: 'test', level: 'error', format: 'json' }),
    });
    await loop.start();
    releases.push(track('late loop', () => loop.stop()));
    await eventually(async () => ((await engine.store.webhooks.pendingTasks()) === 0 ? true : undefined));
    expect(requestsTo('expired')).to.have.length(0);
    expect(await engine.store.webhooks.outcomes()).to.deep.include({ expired: 1 });
  });
});
