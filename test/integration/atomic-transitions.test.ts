// The state machine in Redis under races: transitions are one Lua script each, so exactly one of two racing
// moves out of a status wins, and terminal statuses never move again (DESIGN invariant 1).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  DEFAULT_SESSION_STREAM,
  InputBroker,
  KeySpace,
  SessionEvents,
  Subscriber,
  TaskKeys,
  TaskStore,
} from '@mcp-tasks/engine';
import { cancelledSettlement, settleWithResult, TASK_STATUSES, type TaskRecord } from '@mcp-tasks/protocol';
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

  async function newTask(): Promise<TaskRecord> {
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
    await store.create({ record, arguments: {} });
    return record;
  }

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
