// The state machine in Redis under races: transitions are one Lua script each, so exactly one of two racing
// moves out of a status wins, and terminal statuses never move again (invariant 1 of docs/architecture.md). A worker's moves are
// fenced by its attempt, and a later attempt withdraws the input requests an earlier one left.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import {
  DEFAULT_SESSION_STREAM,
  InputBroker,
  KeySpace,
  Maintenance,
  SessionEvents,
  Subscriber,
  TaskKeys,
  TaskStore,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { createLogger } from '@mcp-tasks/runtime';
import {
  cancelledSettlement,
  lostSettlement,
  settleWithResult,
  TASK_STATUSES,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { eventually } from '../support/mcp-client.ts';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

describe('atomic transitions in Redis', () => {
  let redis: Redis;
  let store: TaskStore;
  let keys: KeySpace;
  let release: () => Promise<void>;

  before(async () => {
    redis = new Redis(await sharedRedisUrl());
    release = track('atomic-transitions redis', () => redis.disconnect());
    keys = new KeySpace(uniquePrefix());
    store = new TaskStore(redis, keys);
  });
  after(() => release());

  const notice = (requestId: string) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });

  async function newTask(on = store): Promise<TaskRecord> {
    const now = Date.now();
    const record: TaskRecord = {
      taskId: randomUUID(),
      kind: 'task',
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: 60_000,
      pollInterval: 1000,
      owner: 'session:race',
      sessionId: 'race',
      tool: 'wait',
    };
    await on.create({ record, arguments: {} });
    return record;
  }

  it('history: each move appends one entry in order, and a full history keeps its creation entry and the last 19', async () => {
    const task = await newTask();
    for (let i = 1; i <= 24; i++) {
      const moved = await store.note(task, 'working', i % 2 === 0 ? `note ${i}` : 'quote " and ],[ inside');
      expect(moved.ok).to.equal(true);
      if (i === 3) {
        const early = await store.inspect(task.taskId);
        expect(early?.history.map((entry) => entry.statusMessage)).to.deep.equal([
          undefined,
          'quote " and ],[ inside',
          'note 2',
          'quote " and ],[ inside',
        ]);
      }
    }
    await store.settle(task, settleWithResult({ content: [] }));
    const stored = await store.inspect(task.taskId);
    expect(stored?.history).to.have.length(20);
    expect(stored?.history[0]?.at).to.equal(task.createdAt);
    expect(stored?.history.at(-1)?.status).to.equal('completed');
    expect(stored?.history.at(-2)?.statusMessage).to.equal('note 24');
    const times = stored?.history.map((entry) => entry.at) ?? [];
    expect(times).to.deep.equal([...times].sort((a, b) => a - b));
  });

  it('a status message with a lone surrogate is stored with U+FFFD in its place, as plain arguments stored it', async () => {
    // The scripts take their arguments as JSON, whose escape of a lone surrogate cjson refuses (scripts.ts).
    const task = await newTask();
    const moved = await store.note(task, 'working', 'half a pair: \ud83d, and a whole one: \ud83d\ude00 \\ud800');
    expect(moved.ok).to.equal(true);
    const expected = 'half a pair: \ufffd, and a whole one: \ud83d\ude00 \\ud800';
    expect((await store.get(task.taskId))?.statusMessage).to.equal(expected);
    expect((await store.inspect(task.taskId))?.history.at(-1)?.statusMessage).to.equal(expected);
  });

  it('T-LIFE-3, T-CANCEL-3: completion racing cancellation has exactly one winner, 200 times over', async () => {
    const completed = settleWithResult({ content: [{ type: 'text', text: 'done' }] });
    for (let round = 0; round < 200; round++) {
      const task = await newTask();
      const { taskId } = task;
      const [complete, cancel] = await Promise.all([
        store.settle(task, completed),
        store.settle(task, cancelledSettlement()),
      ]);
      expect([complete.ok, cancel.ok].filter(Boolean), `round ${round}`).to.have.length(1);
      const record = await store.get(taskId);
      expect(record?.status).to.equal(complete.ok ? 'completed' : 'cancelled');
      expect(record?.outcome).to.deep.equal(complete.ok ? completed.outcome : cancelledSettlement().outcome);
    }
  });

  it('T-INPUT-1: an answer racing the removal of its request never re-creates it; a second answer is refused', async () => {
    // The broker's subscriber is not used by answer(); the main connection stands in for it.
    const broker = new InputBroker(
      redis,
      keys,
      store,
      new SessionEvents(redis, keys, DEFAULT_SESSION_STREAM),
      new Subscriber(redis),
    );
    const session = { sessionId: 'race', owner: 'session:race' };
    const answer = { result: { action: 'accept' } };
    for (let round = 0; round < 100; round++) {
      const requestId = `mcpt-${randomUUID()}`;
      const key = keys.inputRequest(requestId);
      await redis.hset(key, { taskId: 't', sessionId: 'race', owner: 'session:race', method: 'elicitation/create' });
      await redis.pexpire(key, 60_000);
      // The worker takes the answer and deletes the request while the client answers.
      const [verdict] = await Promise.all([broker.answer(session, requestId, answer), redis.del(key)]);
      expect(['accepted', 'unknown'], `round ${round}`).to.include(verdict);
      expect(await redis.exists(key), `round ${round}`).to.equal(0);
    }
    const requestId = `mcpt-${randomUUID()}`;
    await redis.hset(keys.inputRequest(requestId), { sessionId: 'race', owner: 'session:race' });
    expect(await broker.answer(session, requestId, answer)).to.equal('accepted');
    expect(await broker.answer(session, requestId, answer)).to.equal('already-answered');
    expect(await broker.answer({ sessionId: 'other', owner: 'session:other' }, requestId, answer)).to.equal('unknown');
    await redis.del(keys.inputRequest(requestId));
  });

  it('T-LIFE-2, T-LIFE-3: no transition leaves a terminal status, and a rejected move says the current status', async () => {
    for (const terminal of ['completed', 'failed', 'cancelled'] as const) {
      const task = await newTask();
      const { taskId } = task;
      expect((await store.transition(task, terminal)).ok).to.equal(true);
      for (const to of TASK_STATUSES) {
        expect(await store.transition(task, to)).to.deep.equal({ ok: false, reason: 'rejected', current: terminal });
      }
      expect((await store.get(taskId))?.status).to.equal(terminal);
    }
  });

  it('T-LIFE-2: input_required goes back to working; working to working is refused', async () => {
    const task = await newTask();
    expect((await store.transition(task, 'working')).ok).to.equal(false);
    expect((await store.transition(task, 'input_required')).ok).to.equal(true);
    expect((await store.transition(task, 'working')).ok).to.equal(true);
  });

  it('lastUpdatedAt strictly increases with every change, even within one millisecond', async () => {
    const task = await newTask();
    const { lastUpdatedAt } = task;
    const first = await store.transition(task, 'input_required');
    const second = await store.transition(task, 'working');
    if (!first.ok || !second.ok) throw new Error('transitions should succeed');
    expect(first.lastUpdatedAt).to.be.above(lastUpdatedAt - 1);
    expect(second.lastUpdatedAt).to.be.above(first.lastUpdatedAt);
  });

  it('a stale attempt cannot move the task: once attempt 2 started, attempt 1 can neither note, ask nor settle it', async () => {
    const task = await newTask();
    const done = settleWithResult({ content: [{ type: 'text', text: 'done' }] });
    expect((await store.beginAttempt(task, 1, 'Running on a.', notice)).ok).to.equal(true);
    expect((await store.note(task, 'working', 'Still on a.', { attempt: 1 })).ok).to.equal(true);
    expect((await store.beginAttempt(task, 2, 'Running on b.', notice)).ok).to.equal(true);

    const stale = { ok: false, reason: 'stale', current: 'working', attempt: 2 };
    expect(await store.settle(task, done, { attempt: 1 })).to.deep.equal(stale);
    expect(await store.note(task, 'working', 'Still on a.', { attempt: 1 })).to.deep.equal(stale);
    expect(
      await store.transition(task, 'input_required', { input: { requestId: 'mcpt-stale', delta: 1 }, attempt: 1 }),
    ).to.deep.equal(stale);
    expect(await store.beginAttempt(task, 1, 'Running on a again.', notice)).to.deep.equal(stale);
    const unchanged = await store.inspect(task.taskId);
    expect(unchanged?.record.status).to.equal('working');
    expect(unchanged?.record.statusMessage).to.equal('Running on b.');
    expect(await redis.hget(new TaskKeys(keys).record(task.taskId), 'pendingInputs')).to.equal('0');

    expect((await store.settle(task, done, { attempt: 2 })).ok).to.equal(true);
    const settled = await store.inspect(task.taskId);
    expect(settled?.record.outcome).to.deep.equal(done.outcome);
    expect(settled?.history.filter((entry) => entry.status === 'completed')).to.have.length(1);
  });

  it('moves from outside a worker carry no attempt and are not fenced: a cancel wins over a running attempt', async () => {
    const task = await newTask();
    expect((await store.beginAttempt(task, 3, 'Running on a.', notice)).ok).to.equal(true);
    expect((await store.settle(task, cancelledSettlement())).ok).to.equal(true);
    expect(await store.settle(task, lostSettlement('late'), { attempt: 3 })).to.deep.include({
      ok: false,
      reason: 'rejected',
    });
  });

  it('T-INPUT-4: a new attempt withdraws the requests an earlier one left: deleted, the count reset, back to working, the client told', async () => {
    const subscriberRedis = new Redis(await sharedRedisUrl());
    const releaseSubscriber = track('atomic-transitions subscriber', () => subscriberRedis.disconnect());
    try {
      const events = new SessionEvents(redis, keys, DEFAULT_SESSION_STREAM);
      const broker = new InputBroker(redis, keys, store, events, new Subscriber(subscriberRedis));
      const task = await newTask();
      const session = { sessionId: task.sessionId, owner: task.owner };
      expect((await broker.beginAttempt(task, 1, 'Running on a.')).ok).to.equal(true);
      // Attempt 1 asks twice and waits, as a worker that then dies would.
      const abandoned = new AbortController();
      const options = { signal: abandoned.signal, timeoutMs: 60_000, recheckMs: 1000, resumeMessage: 'Back on a.' };
      const asks = ['First?', 'Second?'].map((message) =>
        broker.ask(task, 'elicitation/create', { message }, { ...options, attempt: 1 }).then(
          () => 'answered',
          (error: Error) => error.message,
        ),
      );
      const record = new TaskKeys(keys).record(task.taskId);
      const oldIds = await eventually(async () => {
        const ids = Object.keys(await redis.hgetall(keys.sessionInputs(task.sessionId)));
        return ids.length === 2 && (await redis.hget(record, 'pendingInputs')) === '2' ? ids : undefined;
      });
      expect((await store.get(task.taskId))?.status).to.equal('input_required');
      const since = await events.lastId(task.sessionId);

      expect((await broker.beginAttempt(task, 2, 'Running on b.')).ok).to.equal(true);
      expect(await redis.hget(record, 'pendingInputs')).to.equal('0');
      expect(await redis.hlen(keys.sessionInputs(task.sessionId))).to.equal(0);
      for (const id of oldIds) {
        expect(await redis.exists(keys.inputRequest(id))).to.equal(0);
        // The same refusal as for an unknown id (400 at the api).
        expect(await broker.answer(session, id, { result: { action: 'accept' } })).to.equal('unknown');
      }
      const stored = await store.inspect(task.taskId);
      expect(stored?.record.status).to.equal('working');
      expect(stored?.history.map((entry) => entry.status).slice(-2)).to.deep.equal(['input_required', 'working']);
      const after = await events.after(task.sessionId, since);
      const cancelled = after.flatMap((event) =>
        'message' in event && event.message['method'] === 'notifications/cancelled' ? [event.message['params']] : [],
      );
      expect(cancelled.map((params) => (params as { requestId: string }).requestId)).to.have.members(oldIds);
      expect(after.some((event) => 'status' in event && event.status.status === 'working')).to.equal(true);

      // Attempt 1 unwinds late: its requests are gone already, and its moves no longer count.
      abandoned.abort();
      expect(await Promise.all(asks)).to.deep.equal(['This operation was aborted', 'This operation was aborted']);
      expect(await redis.hget(record, 'pendingInputs')).to.equal('0');
      expect((await store.get(task.taskId))?.status).to.equal('working');
      const late = await events.after(task.sessionId, since);
      expect(
        late.filter((event) => 'message' in event && event.message['method'] === 'notifications/cancelled'),
      ).to.have.length(2);
    } finally {
      await releaseSubscriber();
    }
  });

  it('the reconciler settles by compare-and-set: a task that changed while its job was read is left as it is', async () => {
    // Its own key space: the reconciler looks at every live task of it.
    const own = new TaskStore(redis, new KeySpace(uniquePrefix()));
    const log = createLogger({ service: 'test', level: 'error' });
    const changes = {
      // A callback task: the worker records where the work runs, then its job finishes on purpose.
      'marked for a callback': (task: TaskRecord) =>
        own.markExternal(task, { mode: 'callback', externalId: 'ext-1', submittedAt: Date.now() }),
      'noted by its worker': (task: TaskRecord) => own.note(task, 'working', 'Submitted; waiting for its report.'),
      unchanged: () => Promise.resolve(undefined),
    };
    for (const [name, change] of Object.entries(changes)) {
      const task = await newTask(own);
      // The job is read after the record: the change lands between the two reads.
      const queue = {
        getJob: async (id: string) => {
          if (id === task.taskId) await change(task);
          return { getState: () => Promise.resolve('completed'), returnvalue: undefined, failedReason: undefined };
        },
      } as unknown as Queue<ToolJobData>;
      const maintenance = new Maintenance(redis, own, queue, log, {
        intervalMs: 60_000,
        reconcileAfterMs: 0,
        batchSize: 100,
      });
      const settled = await maintenance.reconcileStale(Date.now() + 1);
      const status = (await own.get(task.taskId))?.status;
      if (name === 'unchanged') {
        // The guard refuses only a stale read: an unchanged stuck task is settled as before.
        expect([settled, status], name).to.deep.equal([1, 'failed']);
      } else {
        expect([settled, status], name).to.deep.equal([0, 'working']);
      }
      await own.settle(task, cancelledSettlement());
    }
  });

  it('a transition of a missing or expired task says so and creates nothing', async () => {
    const id = randomUUID();
    expect(await store.transition({ taskId: id, sessionId: 'race', owner: 'session:race' }, 'completed')).to.deep.equal(
      {
        ok: false,
        reason: 'missing',
      },
    );
    expect(await redis.exists(new TaskKeys(keys).record(id))).to.equal(0);
  });
});
