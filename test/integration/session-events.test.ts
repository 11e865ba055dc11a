// The session event stream in Redis: a status change is appended by the transition script in the same step as
// the change, as facts, and rendered by the reader with the renderer of tasks/get; entries of other kinds (and of
// older versions, which stored the rendered JSON) are read as the messages they are.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { DEFAULT_SESSION_STREAM, KeySpace, SessionEvents, TaskStore, type StreamEvent } from '@mcp-tasks/engine';
import { TaskKind, taskStatusNotification, toWireTask, type TaskRecord } from '@mcp-tasks/protocol';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

describe('session event stream', () => {
  let redis: Redis;
  let keys: KeySpace;
  let store: TaskStore;
  let events: SessionEvents;
  let release: () => Promise<void>;

  before(async () => {
    redis = new Redis(await sharedRedisUrl());
    release = track('session-events redis', () => redis.disconnect());
    keys = new KeySpace(uniquePrefix());
    store = new TaskStore(redis, keys);
    events = new SessionEvents(redis, keys, DEFAULT_SESSION_STREAM);
  });
  after(() => release());

  async function newTask(kind: TaskKind = TaskKind.Task): Promise<TaskRecord> {
    const now = Date.now();
    const sessionId = randomUUID();
    const record: TaskRecord = {
      taskId: randomUUID(),
      kind,
      status: 'working',
      statusMessage: 'The task is queued for a worker.',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: 60_000,
      pollInterval: 1000,
      owner: `session:${sessionId}`,
      sessionId,
      tool: 'wait',
    };
    await store.create({ record, arguments: {} });
    return record;
  }

  const rendered = (event: StreamEvent | undefined) =>
    event && 'status' in event ? taskStatusNotification(event.status) : event?.message;

  it('T-NOTIFY-1: each status change is appended with it, in order, and renders as the Task tasks/get renders', async () => {
    const task = await newTask();
    const asked = await store.transition(task, 'input_required', { statusMessage: 'Waiting for the client.' });
    const resumed = await store.transition(task, 'working');
    if (!asked.ok || !resumed.ok) throw new Error('transitions should succeed');
    const done = await store.transition(task, 'completed', { statusMessage: 'Done.' });
    if (!done.ok) throw new Error('completion should succeed');

    const stream = await events.after(task.sessionId, '0-0');
    expect(stream.map((event) => event.taskId)).to.deep.equal([task.taskId, task.taskId, task.taskId]);
    const wire = (status: TaskRecord['status'], lastUpdatedAt: number, statusMessage?: string) => ({
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: toWireTask({ ...task, status, lastUpdatedAt, statusMessage }),
    });
    expect(stream.map(rendered)).to.deep.equal([
      wire('input_required', asked.lastUpdatedAt, 'Waiting for the client.'),
      wire('working', resumed.lastUpdatedAt),
      wire('completed', done.lastUpdatedAt, 'Done.'),
    ]);
    // The last event is the record as tasks/get renders it now, byte for byte.
    const record = await store.get(task.taskId);
    if (!record) throw new Error('the record should exist');
    expect(JSON.stringify(rendered(stream.at(-1)))).to.equal(
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: toWireTask(record) }),
    );
  });

  it('a plain call (not a task for the client) gets no status events', async () => {
    const call = await newTask(TaskKind.PlainToolCall);
    expect((await store.transition(call, 'completed')).ok).to.equal(true);
    expect(await events.after(call.sessionId, '0-0')).to.deep.equal([]);
  });

  it('messages written as JSON-RPC (progress, input requests, status of older versions) are read back as they are', async () => {
    const task = await newTask();
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } };
    await events.append(task.sessionId, task.taskId, progress);
    // An entry written by the transition script of an earlier version: the notification rendered in Lua.
    const legacy = {
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: { taskId: task.taskId, status: 'working', createdAt: '2026-01-01T00:00:00.000Z' },
    };
    const key = keys.sessionEvents(task.sessionId);
    await redis.xadd(key, '*', 'taskId', task.taskId, 'message', JSON.stringify(legacy));
    await store.transition(task, 'completed');

    const stream = await events.after(task.sessionId, '0-0');
    expect(stream.map(rendered).slice(0, 2)).to.deep.equal([progress, legacy]);
    expect(stream[2] && 'status' in stream[2] ? stream[2].status.status : undefined).to.equal('completed');
  });
});
