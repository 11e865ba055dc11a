// Durable waits (docs/durable-execution.md, "Waits") with real worker processes, real Redis and real HTTP: a sleep
// frees its worker slot (a second task of a tool of concurrency 1 completes meanwhile) and survives kill -9 of every
// worker; events delivered by `mcpt signal`, the api's endpoint and another tool, kept when sent early, refused to
// another principal, and a wait's timeout; a step's own retry policy; a parked elicitation answered on both wires
// after its worker restarted; and what operators see of parked tasks.
import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '@mcp-tasks/cli';
import { signCallbackToken } from '@mcp-tasks/engine';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { modernResult, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/processes.ts';
import { SseConnection } from '../support/sse-client.ts';

const ADMIN_TOKEN = 'waits-admin-token-0123456789';
const CALLBACK_SECRET = 'waits-callback-secret-0123456789abcdef';
const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef0' };

type Task = Record<string, unknown>;

describe('durable waits: sleeps, events, step retries and parked input (1 api, workers of concurrency 1)', function () {
  this.timeout(90_000);
  let system: System;
  let scratch: string;
  let alice: McpTestClient;
  let bob: McpTestClient;

  before(async () => {
    system = await startSystem({
      apis: 1,
      workers: 1,
      env: {
        MCPT_TOOLS: './test/fixtures/durable/waits.ts',
        WORKER_CONCURRENCY: '1',
        // Short locks: a killed worker's active job would be recovered within about two seconds.
        WORKER_LOCK_DURATION_MS: '1000',
        WORKER_STALLED_INTERVAL_MS: '1000',
        CANCEL_CHECK_INTERVAL_MS: '500',
        RESULT_RECHECK_MS: '1000',
        AUTH_API_KEYS: `alice:${KEYS.alice},bob:${KEYS.bob}`,
        ADMIN_TOKEN,
        CALLBACK_SECRET,
        // Small bounds, reached by the bounds test.
        EVENTS_MAX_KEPT: '3',
        EVENT_MAX_BYTES: '1024',
      },
    });
    scratch = mkdtempSync(join(tmpdir(), 'mcpt-waits-'));
    alice = await client(KEYS.alice);
    bob = await client(KEYS.bob);
  });
  after(async () => {
    await system?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  async function client(key: string, capabilities: Record<string, unknown> = {}): Promise<McpTestClient> {
    const made = new McpTestClient(system.apiUrl);
    made.headers = { authorization: `Bearer ${key}` };
    await made.initialize('2025-11-25', capabilities);
    return made;
  }

  async function settled(by: McpTestClient, taskId: unknown, timeoutMs = 20_000): Promise<Task> {
    return eventually(async () => {
      const task = await by.call('tasks/get', { taskId });
      return ['completed', 'failed', 'cancelled'].includes(String(task['status'])) ? task : undefined;
    }, timeoutMs);
  }

  async function result(by: McpTestClient, taskId: unknown): Promise<Task> {
    return by.call('tasks/result', { taskId }, { headers: { accept: 'application/json' } });
  }

  async function structured(by: McpTestClient, taskId: unknown): Promise<Record<string, unknown>> {
    return (await result(by, taskId))['structuredContent'] as Record<string, unknown>;
  }

  /** Waits until the task's statusMessage starts with `prefix`: the task is parked. */
  async function parkedWith(by: McpTestClient, taskId: unknown, prefix: string): Promise<Task> {
    return eventually(async () => {
      const task = await by.call('tasks/get', { taskId });
      const message = task['statusMessage'];
      return typeof message === 'string' && message.startsWith(prefix) ? task : undefined;
    });
  }

  async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(args, {
      out: (text) => (out += text),
      err: (text) => (err += text),
      env: { REDIS_URL: system.redisUrl, REDIS_PREFIX: system.prefix },
    });
    return { code, out, err };
  }

  function postEvent(taskId: string, name: string, body: unknown, token?: string): Promise<Response> {
    const base = system.apiUrl.replace(/\/mcp$/, '');
    return fetch(`${base}/tasks/${encodeURIComponent(taskId)}/events/${encodeURIComponent(name)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  it('with a per-tool concurrency of 1 on a worker of concurrency 1, a second task completes while the first sleeps; the sleeper says until when and wakes after it', async () => {
    const first = String((await alice.createTask('nap', { ms: 3000 }))['taskId']);
    const parked = await parkedWith(alice, first, 'Sleeping until ');
    expect(parked['status']).to.equal('working');
    const until = Date.parse(String(parked['statusMessage']).slice('Sleeping until '.length, -1));
    expect(until).to.be.above(Date.now());

    const second = String((await alice.createTask('nap', { ms: 0 }))['taskId']);
    expect((await settled(alice, second))['status']).to.equal('completed');
    expect((await alice.call('tasks/get', { taskId: first }))['status']).to.equal('working');

    expect((await settled(alice, first))['status']).to.equal('completed');
    const report = (await structured(alice, first)) as { woke: { at: number }; until: number; attempt: number };
    expect(report.woke.at).to.be.at.least(until);
    expect(report.woke.at).to.be.at.least(report.until);
    // A wake spends no attempt (ctx.attempt counts failed runs and crashes).
    expect(report.attempt).to.equal(1);
  });

  it('a sleeping task wakes on time after every worker was killed (kill -9) and one restarted', async () => {
    const taskId = String((await alice.createTask('nap', { ms: 5000 }))['taskId']);
    const parked = await parkedWith(alice, taskId, 'Sleeping until ');
    const until = Date.parse(String(parked['statusMessage']).slice('Sleeping until '.length, -1));
    for (const worker of [...system.workers]) await worker.stop('SIGKILL');
    const restarted = await system.addWorker();
    const readyAt = Date.now();
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    const report = (await structured(alice, taskId)) as { woke: { at: number; pid: number }; until: number };
    expect(report.woke.pid).to.equal(restarted.process.pid);
    expect(report.woke.at).to.be.at.least(until);
    // On time: within a second of its end, or of the restart when that came later (a loaded machine).
    expect(report.woke.at - Math.max(until, readyAt)).to.be.below(1000);
  });

  it('what runs again: the code between waits runs again after each wake, the waits already over do not wait again', async () => {
    const file = join(scratch, 'twice.log');
    const taskId = String((await alice.createTask('nap_twice', { ms: 300, file }))['taskId']);
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    expect(readFileSync(file, 'utf8').trim().split('\n')).to.deep.equal([
      'before',
      'before',
      'between',
      'before',
      'between',
      'after',
    ]);
  });

  it('a sleep that would end after its task expires is refused with wait-too-long', async () => {
    const taskId = String((await alice.createTask('sleep_too_long', {}))['taskId']);
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    const refusal = await structured(alice, taskId);
    expect(refusal).to.include({ name: 'LocalError', code: 'wait-too-long' });
    expect(refusal['message']).to.match(/would end after task \S+ expires at/);
  });

  it('an event sent by mcpt signal resumes a task waiting for it, with its data', async () => {
    const taskId = String((await alice.createTask('await_event', { name: 'approved' }))['taskId']);
    await parkedWith(alice, taskId, "Waiting for event 'approved' until ");
    const sent = await cli('signal', taskId, 'approved', '--data', '{"by":"ops"}');
    expect(sent.code, sent.err).to.equal(0);
    expect(sent.out).to.match(/^Delivered event 'approved' to task /);
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    expect((await structured(alice, taskId))['outcome']).to.deep.equal({ timedOut: false, data: { by: 'ops' } });
  });

  it("an event POSTed to the api by the task's principal resumes it with its data; another principal's is refused as for an unknown task", async () => {
    const taskId = String((await alice.createTask('await_event', { name: 'paid' }))['taskId']);
    await parkedWith(alice, taskId, "Waiting for event 'paid' until ");

    const foreign = await postEvent(taskId, 'paid', { data: 'forged' }, KEYS.bob);
    const unknown = await postEvent('no-such-task-0123456789', 'paid', { data: 'x' }, KEYS.bob);
    expect(foreign.status).to.equal(404);
    expect(await foreign.json()).to.deep.equal(await unknown.json());
    expect((await postEvent(taskId, 'paid', { data: 'x' })).status).to.equal(401);
    expect((await alice.call('tasks/get', { taskId }))['status']).to.equal('working');

    const own = await postEvent(taskId, 'paid', { data: { invoice: 42 } }, KEYS.alice);
    expect(own.status).to.equal(202);
    expect(await own.json()).to.deep.equal({ delivered: true });
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    expect((await structured(alice, taskId))['outcome']).to.deep.equal({ timedOut: false, data: { invoice: 42 } });
    // An ended task takes no more events.
    expect((await postEvent(taskId, 'paid', {}, KEYS.alice)).status).to.equal(409);
  });

  it('an event sent before the task waits for it is kept and taken once; ctx.signalTask reaches a task of the same principal only', async () => {
    const waiting = String((await alice.createTask('await_event', { name: 'go' }))['taskId']);
    await parkedWith(alice, waiting, "Waiting for event 'go' until ");
    // Another event than the one waited for (here by an operator's token) is kept: the task keeps waiting.
    const early = await postEvent(waiting, 'later', { data: 1 }, ADMIN_TOKEN);
    expect(await early.json()).to.deep.equal({ delivered: false, kept: 1 });

    const fromBob = String((await bob.createTask('send_event', { taskId: waiting, name: 'go', data: 'x' }))['taskId']);
    expect((await settled(bob, fromBob))['status']).to.equal('completed');
    expect(await structured(bob, fromBob)).to.deep.equal({ refused: 'TaskNotFoundError', code: 'task-not-found' });

    const fromAlice = String(
      (await alice.createTask('send_event', { taskId: waiting, name: 'go', data: [1, 2] }))['taskId'],
    );
    expect((await settled(alice, fromAlice))['status']).to.equal('completed');
    expect(await structured(alice, fromAlice)).to.deep.equal({ delivered: true });
    expect((await settled(alice, waiting))['status']).to.equal('completed');
    expect((await structured(alice, waiting))['outcome']).to.deep.equal({ timedOut: false, data: [1, 2] });

    // Events sent before their wait are kept, and each wait takes the oldest of its name, once.
    const both = String((await alice.createTask('two_events', {}))['taskId']);
    await parkedWith(alice, both, "Waiting for event 'first' until ");
    for (const [data, kept] of [
      ['b1', 1],
      ['b2', 2],
    ] as const) {
      expect(await (await postEvent(both, 'second', { data }, KEYS.alice)).json()).to.deep.equal({
        delivered: false,
        kept,
      });
    }
    expect(await (await postEvent(both, 'first', { data: 'a' }, KEYS.alice)).json()).to.deep.equal({ delivered: true });
    expect((await settled(alice, both))['status']).to.equal('completed');
    expect(await structured(alice, both)).to.deep.equal({
      first: { timedOut: false, data: 'a' },
      second: { timedOut: false, data: 'b1' },
    });
    const inspected = JSON.parse((await cli('inspect', both, '--json')).out) as { waits: Record<string, unknown> };
    expect(inspected.waits).to.deep.equal({ waits: 2, eventsKept: 1 });
  });

  it("events are bounded: a name's characters, the data's size (EVENT_MAX_BYTES), the events kept per task (EVENTS_MAX_KEPT); a task's callback token sends it events, another task's does not", async () => {
    const taskId = String((await alice.createTask('await_event', { name: 'bounded' }))['taskId']);
    await parkedWith(alice, taskId, "Waiting for event 'bounded' until ");
    const own = signCallbackToken(CALLBACK_SECRET, taskId, Date.now() + 60_000);
    const other = signCallbackToken(CALLBACK_SECRET, 'another-task-0123456789', Date.now() + 60_000);
    expect((await postEvent(taskId, 'x', { data: 1 }, other)).status).to.equal(401);
    for (const kept of [1, 2, 3]) {
      expect(await (await postEvent(taskId, 'x', { data: kept }, own)).json()).to.deep.equal({
        delivered: false,
        kept,
      });
    }
    const full = await postEvent(taskId, 'x', { data: 4 }, KEYS.alice);
    expect(full.status).to.equal(429);
    expect(await full.json()).to.include({ error: 'limit_exceeded', limit: 'EVENTS_MAX_KEPT', max: 3 });
    const large = await postEvent(taskId, 'bounded', { data: 'x'.repeat(2000) }, KEYS.alice);
    expect(large.status).to.equal(413);
    expect(await large.json()).to.include({ limit: 'EVENT_MAX_BYTES', max: 1024 });
    expect((await postEvent(taskId, 'no spaces', {}, KEYS.alice)).status).to.equal(400);
    expect((await postEvent(taskId, 'bounded', [1, 2], KEYS.alice)).status).to.equal(400);
    const signal = await cli('signal', taskId, 'bounded', '--data', '{not json');
    expect(signal.code).to.equal(2);
    expect(signal.err).to.match(/--data is not JSON/);
    // Still waiting: nothing was stored by the refusals; an event without a body completes it.
    expect((await alice.call('tasks/get', { taskId }))['status']).to.equal('working');
    expect((await postEvent(taskId, 'bounded', undefined, own)).status).to.equal(202);
    expect((await structured(alice, (await settled(alice, taskId))['taskId']))['outcome']).to.deep.equal({
      timedOut: false,
    });
  });

  it('a wait for an event that does not come ends with its timeout outcome', async () => {
    const started = Date.now();
    const taskId = String((await alice.createTask('await_event', { name: 'never', timeoutMs: 1500 }))['taskId']);
    expect((await settled(alice, taskId))['status']).to.equal('completed');
    expect((await structured(alice, taskId))['outcome']).to.deep.equal({ timedOut: true });
    expect(Date.now() - started).to.be.at.least(1500);
  });

  it('a step with its own retry policy runs its function the configured number of times: until it succeeds, or its last try fails the tool', async () => {
    const passing = join(scratch, 'passing.log');
    const ok = String((await alice.createTask('flaky_step', { file: passing, failures: 2, attempts: 3 }))['taskId']);
    expect((await settled(alice, ok))['status']).to.equal('completed');
    expect(await structured(alice, ok)).to.deep.equal({ tries: 3 });
    expect(readFileSync(passing, 'utf8').trim().split('\n')).to.have.length(3);

    const failing = join(scratch, 'failing.log');
    const ko = String((await alice.createTask('flaky_step', { file: failing, failures: 9, attempts: 4 }))['taskId']);
    const failed = await settled(alice, ko);
    expect(failed['status']).to.equal('failed');
    expect(readFileSync(failing, 'utf8').trim().split('\n')).to.have.length(4);

    // A FinalError is not tried again.
    const final = join(scratch, 'final.log');
    const once = String(
      (await alice.createTask('flaky_step', { file: final, failures: 9, attempts: 4, final: true }))['taskId'],
    );
    expect((await settled(alice, once))['status']).to.equal('failed');
    expect(readFileSync(final, 'utf8').trim().split('\n')).to.have.length(1);
  });

  it("a step's failed tries are counted across attempts: after a crash the next attempt goes on counting", async () => {
    const file = join(scratch, 'crashing.log');
    const taskId = String((await alice.createTask('crashing_step', { file }))['taskId']);
    // The second try kills the worker: another one takes the task over.
    await eventually(() =>
      existsSync(file) && readFileSync(file, 'utf8').trim().split('\n').length >= 2 ? true : undefined,
    );
    await system.addWorker();
    expect((await settled(alice, taskId))['status']).to.equal('failed');
    // Two failed tries before the crash would be one, the try the crash cut off is not counted: two more after it,
    // not three (a count that started again).
    const tries = readFileSync(file, 'utf8').trim().split('\n');
    expect(tries).to.have.length(4);
    expect(new Set(tries.slice(2)).size).to.equal(1);
    expect(tries[2]).to.not.equal(tries[0]);
  });

  it('a parked elicitation frees its worker, shows input_required on both wires, and is answered on both after its worker restarted', async () => {
    const asker = await client(KEYS.alice, { elicitation: { form: {} } });
    const legacy = String((await asker.createTask('ask_parked', { question: 'Colour?' }))['taskId']);
    const modernOptions = { bearer: KEYS.alice, capabilities: { ...WITH_TASKS, elicitation: {} } };
    const created = await modernResult(
      system.apiUrl,
      'tools/call',
      { name: 'ask_parked', arguments: { question: 'Size?' } },
      modernOptions,
    );
    const modern = String(created['taskId']);
    await eventually(async () => {
      const task = await asker.call('tasks/get', { taskId: legacy });
      return task['status'] === 'input_required' ? task : undefined;
    });
    const waiting = await eventually(async () => {
      const task = await modernResult(system.apiUrl, 'tasks/get', { taskId: modern }, modernOptions);
      return task['status'] === 'input_required' ? task : undefined;
    });
    expect(Object.keys(waiting['inputRequests'] as Record<string, unknown>)).to.deep.equal(['question']);
    // Both wait without a worker: a task of the worker's one slot runs meanwhile.
    const meanwhile = String((await alice.createTask('nap', { ms: 0 }))['taskId']);
    expect((await settled(alice, meanwhile))['status']).to.equal('completed');

    for (const worker of [...system.workers]) await worker.stop('SIGKILL');
    const restarted = await system.addWorker();

    // 2025-11-25: the request reaches the client on its tasks/result stream, and its answer resumes the task.
    const stream = await SseConnection.open(system.apiUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': String(asker.sessionId),
        'mcp-protocol-version': '2025-11-25',
        authorization: `Bearer ${KEYS.alice}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tasks/result', params: { taskId: legacy } }),
    });
    const request = await stream.next(
      (event) => event.message['method'] === 'elicitation/create' && 'id' in event.message,
    );
    expect((request.message['params'] as { message: string }).message).to.equal('Colour?');
    const answered = await asker.post({
      jsonrpc: '2.0',
      id: request.message['id'],
      result: { action: 'accept', content: { answer: 'teal' } },
    });
    expect(answered.status).to.equal(202);
    const final = await stream.next((event) => event.message['id'] === 99, 20_000);
    await stream.finished();
    expect((final.message['result'] as Task)['structuredContent']).to.deep.equal({
      asked: { action: 'accept', content: { answer: 'teal' } },
      pid: restarted.process.pid,
    });

    // 2026-07-28: tasks/update answers the request by its key.
    await modernResult(
      system.apiUrl,
      'tasks/update',
      { taskId: modern, inputResponses: { question: { action: 'accept', content: { answer: 'L' } } } },
      modernOptions,
    );
    const done = await eventually(async () => {
      const task = await modernResult(system.apiUrl, 'tasks/get', { taskId: modern }, modernOptions);
      return task['status'] === 'completed' ? task : undefined;
    }, 20_000);
    expect((done['result'] as Task)['structuredContent']).to.deep.equal({
      asked: { action: 'accept', content: { answer: 'L' } },
      pid: restarted.process.pid,
    });
  });

  it('operators see every parked task with what it waits for and until when: mcpt inspect, mcpt overview, the dashboard and a metric; a cancel ends the wait', async () => {
    const waiting = String((await alice.createTask('await_event', { name: 'ops' }))['taskId']);
    await parkedWith(alice, waiting, "Waiting for event 'ops' until ");
    const sleeping = String((await alice.createTask('nap', { ms: 60_000 }))['taskId']);
    await parkedWith(alice, sleeping, 'Sleeping until ');

    const inspected = await cli('inspect', waiting, '--json');
    expect(inspected.code, inspected.err).to.equal(0);
    const waits = (JSON.parse(inspected.out) as { waits: Record<string, unknown> }).waits;
    expect(waits).to.deep.include({ waits: 1, eventsKept: 0 });
    expect(waits['waiting']).to.deep.include({ kind: 'event', name: 'ops', key: 'event:ops#1' });
    expect((await cli('inspect', sleeping)).out).to.match(/parked on\s+sleep until \S+ \(in /);

    const overview = JSON.parse((await cli('overview', '--json')).out) as {
      parked: { byKind: Record<string, number>; soonest: { taskId: string; kind: string; name?: string }[] };
    };
    expect(overview.parked.byKind).to.deep.equal({ sleep: 1, event: 1, input: 0 });
    expect(overview.parked.soonest.map((entry) => [entry.taskId, entry.kind])).to.have.deep.members([
      [waiting, 'event'],
      [sleeping, 'sleep'],
    ]);
    expect((await cli('overview')).out).to.include('Parked tasks (no worker held): 1 sleeping, 1 waiting for an event');

    const base = system.apiUrl.replace(/\/mcp$/, '');
    const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
    const page = (await (await fetch(`${base}/admin/api/tasks/${waiting}`, admin)).json()) as { waits: unknown };
    expect(page.waits).to.deep.equal(waits);
    const dashboard = (await (await fetch(`${base}/admin/api/overview`, admin)).json()) as typeof overview;
    expect(dashboard.parked.byKind).to.deep.equal(overview.parked.byKind);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).to.match(/^mcpt_tasks_parked\{kind="event",service="api"\} 1$/m);
    expect(metrics).to.match(/^mcpt_tasks_parked\{kind="sleep",service="api"\} 1$/m);

    expect((await alice.call('tasks/cancel', { taskId: sleeping }))['status']).to.equal('cancelled');
    expect((JSON.parse((await cli('overview', '--json')).out) as typeof overview).parked.byKind.sleep).to.equal(0);
    expect(
      (JSON.parse((await cli('inspect', sleeping, '--json')).out) as { waits: Record<string, unknown> }).waits,
    ).to.not.have.property('waiting');

    expect((await cli('signal', waiting, 'ops')).code).to.equal(0);
    // An event without data: `data` undefined (absent from the JSON result).
    expect((await structured(alice, (await settled(alice, waiting))['taskId']))['outcome']).to.deep.equal({
      timedOut: false,
    });
  });

  it('T-CANCEL-2: cancelling a task parked on its question withdraws the question: the client is told, and a late answer is refused', async () => {
    const asker = await client(KEYS.alice, { elicitation: { form: {} } });
    const get = await SseConnection.open(system.apiUrl, {
      method: 'GET',
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': String(asker.sessionId),
        'mcp-protocol-version': '2025-11-25',
        authorization: `Bearer ${KEYS.alice}`,
      },
    });
    try {
      const taskId = String((await asker.createTask('ask_parked', { question: 'Still there?' }))['taskId']);
      const request = await get.next(
        (event) => event.message['method'] === 'elicitation/create' && 'id' in event.message,
      );
      await parkedWith(asker, taskId, 'Waiting for the client to answer elicitation/create.');
      expect((await asker.call('tasks/cancel', { taskId }))['status']).to.equal('cancelled');
      const notice = await get.next((event) => event.message['method'] === 'notifications/cancelled');
      expect((notice.message['params'] as { requestId: string }).requestId).to.equal(request.message['id']);
      const late = await asker.post({ jsonrpc: '2.0', id: request.message['id'], result: { action: 'decline' } });
      expect(late.status).to.equal(400);
      const overview = JSON.parse((await cli('overview', '--json')).out) as {
        parked?: { byKind: Record<string, number> };
      };
      expect(overview.parked?.byKind['input'] ?? 0).to.equal(0);
    } finally {
      await get.close();
    }
  });
});
