// One call path: the same scenarios run through the 2025-11-25 wire and the 2026-07-28 wire, and the engine must
// hold the same records for both — scheduling (retries, retry safety, concurrency, timeouts, per-requestor caps),
// ttl, the cap on unfinished tasks, input requests and cancellation. Both wires are driven as clients drive them;
// the records are read from Redis. One principal per scenario (API keys), the same on both wires, so that the
// records can be compared field by field.
import { expect } from 'chai';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { modernPost, modernResult, WITH_TASKS } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { SseConnection } from '../support/sse-client.ts';

const SCENARIOS = [
  'retry',
  'unsafe',
  'serial',
  'timeout',
  'licensed',
  'ttl',
  'capped',
  'ask',
  'cancel',
  'unserved',
] as const;
type Scenario = (typeof SCENARIOS)[number];
const MAX_TASKS_PER_OWNER = 4;
const keyOf = (scenario: Scenario) => `key-${scenario}-0123456789abcdef`;

/** What a wire must let a client do; each implementation speaks its revision. */
interface Wire {
  name: '2025-11-25' | '2026-07-28';
  /** Starts a task of `tool`; its id. */
  create(scenario: Scenario, tool: string, args: Record<string, unknown>): Promise<string>;
  /** A refused create: its JSON-RPC error. */
  refusal(
    scenario: Scenario,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<{ code: number; message: string; data?: unknown }>;
  /** Waits until the task is terminal on the wire; its status there. */
  settled(scenario: Scenario, taskId: string): Promise<string>;
  cancel(scenario: Scenario, taskId: string): Promise<void>;
  /** Answers the task's one elicitation with `content`. */
  answer(scenario: Scenario, taskId: string, content: Record<string, unknown>): Promise<void>;
  /** The task as tasks/get renders it on the wire. */
  read(scenario: Scenario, taskId: string): Promise<Record<string, unknown>>;
}

/** A record as the comparison sees it: without ids, times and the client context, which differ by nature. */
function comparable(stored: Awaited<ReturnType<TaskStore['inspect']>>): Record<string, unknown> {
  if (!stored) throw new Error('no record');
  const { record, history } = stored;
  const outcome = JSON.parse(JSON.stringify(record.outcome ?? null), (key, value: unknown) =>
    key === 'start' || key === 'end' ? 0 : value,
  ) as unknown;
  return {
    kind: record.kind,
    status: record.status,
    statusMessage: timeless(record.statusMessage),
    ttl: record.ttl,
    pollInterval: record.pollInterval,
    owner: record.owner,
    tool: record.tool,
    outcome,
    history: history.map((entry) => [entry.status, timeless(entry.statusMessage)]),
  };
}

function timeless(message: string | undefined): string | undefined {
  return message?.replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>').replace(/\(in [\d.]+ m?s\)/g, '(in <wait>)');
}

describe('one call path: the same scenarios through both wires leave the same engine records', function () {
  this.timeout(120_000);
  let system: System;
  let store: TaskStore;
  const legacyClients = new Map<Scenario, McpTestClient>();

  before(async () => {
    system = await startSystem({
      workers: 1,
      env: {
        MCPT_TOOLS: './test/fixtures/both-wires/tools.ts',
        AUTH_API_KEYS: SCENARIOS.map((scenario) => `${scenario}:${keyOf(scenario)}`).join(','),
        MAX_TASKS_PER_OWNER: String(MAX_TASKS_PER_OWNER),
        // No "Running on <worker>." note: it depends on how long a run takes, not on the wire.
        RUNNING_NOTE_AFTER_MS: '60000',
        WORKER_CONCURRENCY: '8',
      },
    });
    store = new TaskStore(system.redis, new KeySpace(system.prefix));
  });
  after(async () => {
    await system?.stop();
  });

  async function legacyClient(scenario: Scenario): Promise<McpTestClient> {
    let client = legacyClients.get(scenario);
    if (!client) {
      client = new McpTestClient(system.apiUrl);
      client.headers = { authorization: `Bearer ${keyOf(scenario)}` };
      await client.initialize('2025-11-25', { elicitation: { form: {} } });
      legacyClients.set(scenario, client);
    }
    return client;
  }

  const legacy: Wire = {
    name: '2025-11-25',
    async create(scenario, tool, args) {
      const task = await (await legacyClient(scenario)).createTask(tool, args);
      return String(task['taskId']);
    },
    async refusal(scenario, tool, args) {
      const reply = await (await legacyClient(scenario)).rpc('tools/call', { name: tool, arguments: args, task: {} });
      if (!reply.error) throw new Error('not refused');
      return reply.error;
    },
    async settled(scenario, taskId) {
      const client = await legacyClient(scenario);
      const task = await eventually(async () => {
        const read = await client.call('tasks/get', { taskId });
        return ['completed', 'failed', 'cancelled'].includes(String(read['status'])) ? read : undefined;
      }, 30_000);
      return String(task['status']);
    },
    async cancel(scenario, taskId) {
      const task = await (await legacyClient(scenario)).call('tasks/cancel', { taskId });
      expect(task['status']).to.equal('cancelled');
    },
    async answer(scenario, taskId, content) {
      const client = await legacyClient(scenario);
      const stream = await SseConnection.open(client.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': String(client.sessionId),
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${keyOf(scenario)}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'result-1', method: 'tasks/result', params: { taskId } }),
      });
      try {
        const request = await stream.next((event) => event.message['method'] === 'elicitation/create');
        const reply = await client.post({
          jsonrpc: '2.0',
          id: request.message['id'],
          result: { action: 'accept', content },
        });
        expect(reply.status).to.equal(202);
        await stream.next((event) => event.message['id'] === 'result-1');
      } finally {
        await stream.close();
      }
    },
    async read(scenario, taskId) {
      return (await legacyClient(scenario)).call('tasks/get', { taskId });
    },
  };

  const bearer = (scenario: Scenario) => ({
    bearer: keyOf(scenario),
    capabilities: { ...WITH_TASKS, elicitation: {} },
  });
  const modern: Wire = {
    name: '2026-07-28',
    async create(scenario, tool, args) {
      const created = await modernResult(
        system.apiUrl,
        'tools/call',
        { name: tool, arguments: args },
        bearer(scenario),
      );
      expect(created['resultType']).to.equal('task');
      return String(created['taskId']);
    },
    async refusal(scenario, tool, args) {
      const reply = await modernPost(system.apiUrl, 'tools/call', { name: tool, arguments: args }, bearer(scenario));
      if (!reply.body.error) throw new Error('not refused');
      return reply.body.error;
    },
    async settled(scenario, taskId) {
      const done = (task: Record<string, unknown>) =>
        ['completed', 'failed', 'cancelled'].includes(String(task['status']));
      const task = await eventually(async () => {
        const read = await modernResult(system.apiUrl, 'tasks/get', { taskId }, bearer(scenario));
        return done(read) ? read : undefined;
      }, 30_000);
      return String(task['status']);
    },
    async cancel(scenario, taskId) {
      expect(await modernResult(system.apiUrl, 'tasks/cancel', { taskId }, bearer(scenario))).to.deep.include({
        resultType: 'complete',
      });
    },
    async answer(scenario, taskId, content) {
      const waiting = await eventually(async () => {
        const read = await modernResult(system.apiUrl, 'tasks/get', { taskId }, bearer(scenario));
        return read['status'] === 'input_required' ? read : undefined;
      });
      const [key] = Object.keys(waiting['inputRequests'] as Record<string, unknown>);
      await modernResult(
        system.apiUrl,
        'tasks/update',
        { taskId, inputResponses: { [String(key)]: { action: 'accept', content } } },
        bearer(scenario),
      );
    },
    async read(scenario, taskId) {
      return modernResult(system.apiUrl, 'tasks/get', { taskId }, bearer(scenario));
    },
  };

  /** Runs `scenario` on each wire in turn and answers both wires' records, for comparison. */
  async function onBothWires(
    scenario: Scenario,
    run: (wire: Wire) => Promise<string[]>,
  ): Promise<Record<string, Record<string, unknown>[]>> {
    const records: Record<string, Record<string, unknown>[]> = {};
    for (const wire of [legacy, modern]) {
      const ids = await run(wire);
      records[wire.name] = await Promise.all(ids.map(async (id) => comparable(await store.inspect(id))));
    }
    return records;
  }

  function expectSame(records: Record<string, Record<string, unknown>[]>): Record<string, unknown>[] {
    expect(records['2026-07-28']).to.deep.equal(records['2025-11-25']);
    return records['2025-11-25'] ?? [];
  }

  it('T-CREATE-1, X-RES-3: a retry policy of 5 attempts carries a tool that fails 3 times to completion on both wires', async () => {
    const [record] = expectSame(
      await onBothWires('retry', async (wire) => {
        const id = await wire.create('retry', 'flaky', { failures: 3 });
        expect(await wire.settled('retry', id)).to.equal('completed');
        return [id];
      }),
    );
    expect(record?.['outcome']).to.deep.include({
      result: { content: [{ type: 'text', text: 'attempt 4' }], structuredContent: { attempt: 4, start: 0, end: 0 } },
    });
    expect((record?.['history'] as unknown[][]).map(([, message]) => message)).to.include(
      'Attempt 3 of 5 failed: run 3 broke. Attempt 4 starts at <time> (in <wait>).',
    );
  });

  it('retrySafe: false still grants a tool its retry policy (4 attempts) on both wires', async () => {
    const [record] = expectSame(
      await onBothWires('unsafe', async (wire) => {
        const id = await wire.create('unsafe', 'unsafe', { failures: 3 });
        expect(await wire.settled('unsafe', id)).to.equal('completed');
        return [id];
      }),
    );
    expect(JSON.stringify(record?.['outcome'])).to.contain('attempt 4');
  });

  it('concurrency 1 holds for the calls of either wire: no two runs overlap', async () => {
    const starts: Record<string, { start: number; end: number }[]> = {};
    expectSame(
      await onBothWires('serial', async (wire) => {
        const ids = await Promise.all([1, 2, 3].map(() => wire.create('serial', 'serial', { ms: 150 })));
        for (const id of ids) expect(await wire.settled('serial', id)).to.equal('completed');
        const runs = await Promise.all(ids.map(async (id) => (await store.get(id))?.outcome));
        starts[wire.name] = runs.map((outcome) => {
          const report = (outcome as { result: { structuredContent: { start: number; end: number } } }).result
            .structuredContent;
          return { start: report.start, end: report.end };
        });
        return ids;
      }),
    );
    for (const runs of Object.values(starts)) {
      const sorted = [...runs].sort((a, b) => a.start - b.start);
      for (let i = 1; i < sorted.length; i++) expect(sorted[i]?.start).to.be.at.least(sorted[i - 1]?.end as number);
    }
  });

  it('timeoutMs fails a run that takes longer, with the same words on both wires', async () => {
    const [record] = expectSame(
      await onBothWires('timeout', async (wire) => {
        const id = await wire.create('timeout', 'slow', { ms: 10_000 });
        expect(await wire.settled('timeout', id)).to.equal('failed');
        return [id];
      }),
    );
    expect(record?.['statusMessage']).to.equal('Attempt 1 of 1 timed out after 200 ms (timeoutMs)');
  });

  it('maxRunningPerOwner holds a requestor’s second run back, saying so, on both wires', async () => {
    const records = expectSame(
      await onBothWires('licensed', async (wire) => {
        const ids = [
          await wire.create('licensed', 'licensed', { ms: 1500 }),
          await wire.create('licensed', 'licensed', { ms: 0 }),
        ];
        for (const id of ids) expect(await wire.settled('licensed', id)).to.equal('completed');
        return ids;
      }),
    );
    const held = (records[1]?.['history'] as unknown[][]).map(([, message]) => message);
    expect(held.some((message) => String(message).startsWith('Queued behind 1 of your own tasks'))).to.equal(true);
  });

  it('T-CREATE-2, X-GET-4: without a requested ttl both wires grant the default; a 2025 client may ask for another', async () => {
    const [record] = expectSame(
      await onBothWires('ttl', async (wire) => {
        const id = await wire.create('ttl', 'quick', {});
        expect(await wire.settled('ttl', id)).to.equal('completed');
        return [id];
      }),
    );
    expect(record?.['ttl']).to.equal(3_600_000);
    const asked = await (await legacyClient('ttl')).createTask('quick', {}, { ttl: 120_000 });
    expect((await store.get(String(asked['taskId'])))?.ttl).to.equal(120_000);
  });

  it('T-RSRC-1: the cap on a requestor’s unfinished tasks refuses the same call on both wires, each in its code', async () => {
    const refusals: Record<string, { code: number; message: string; data?: unknown }> = {};
    expectSame(
      await onBothWires('capped', async (wire) => {
        const ids: string[] = [];
        for (let i = 0; i < MAX_TASKS_PER_OWNER; i++) ids.push(await wire.create('capped', 'serial', { ms: 60_000 }));
        refusals[wire.name] = await wire.refusal('capped', 'serial', { ms: 0 });
        for (const id of ids) await wire.cancel('capped', id);
        return ids;
      }),
    );
    const message =
      `Too many unfinished tasks: at most ${MAX_TASKS_PER_OWNER} may run or wait at once per requestor ` +
      '(MAX_TASKS_PER_OWNER); wait for some to finish or cancel them';
    const data = { limit: 'tasks_per_owner', max: MAX_TASKS_PER_OWNER };
    expect(refusals['2025-11-25']).to.deep.equal({ code: -32029, message, data });
    // C26-ERR-2: -32029 lies in the range 2026-07-28 reserves; its own code carries the same refusal.
    expect(refusals['2026-07-28']).to.deep.equal({ code: -32000, message, data });
  });

  it('T-INPUT-1, X-UPD-1: a tool’s question reaches the client of either wire, and the answer resumes it', async () => {
    const [record] = expectSame(
      await onBothWires('ask', async (wire) => {
        const id = await wire.create('ask', 'ask', {});
        await wire.answer('ask', id, { colour: 'blue' });
        expect(await wire.settled('ask', id)).to.equal('completed');
        return [id];
      }),
    );
    expect((record?.['history'] as unknown[][]).map(([status]) => status)).to.deep.equal([
      'working',
      'input_required',
      'working',
      'completed',
    ]);
    expect(JSON.stringify(record?.['outcome'])).to.contain('blue');
  });

  it('T-CANCEL-2, X-CAN-1: a cancel moves the task to cancelled and stops its run, on both wires', async () => {
    const [record] = expectSame(
      await onBothWires('cancel', async (wire) => {
        const id = await wire.create('cancel', 'serial', { ms: 60_000 });
        await eventually(async () => ((await store.get(id))?.status === 'working' ? true : undefined));
        await wire.cancel('cancel', id);
        expect(await wire.settled('cancel', id)).to.equal('cancelled');
        return [id];
      }),
    );
    expect(record?.['status']).to.equal('cancelled');
  });

  it('a task whose tool no live worker serves says so in tasks/get, in the same words on both wires (issue 31)', async () => {
    // The demo tools of a worker of their own, stopped once the tasks exist: it withdraws its entries at once.
    const worker = await system.addWorker({ MCPT_TOOLS: '', MCPT_DEMO: '1', WORKER_SHUTDOWN_GRACE_MS: '100' });
    const ids = new Map<Wire, string>();
    for (const wire of [legacy, modern]) {
      ids.set(wire, await eventually(() => wire.create('unserved', 'wait', { seconds: 60 }).catch(() => undefined)));
    }
    await worker.stop('SIGTERM');
    const unserved = /^No live worker serves tool 'wait'; the task waits for one \(up to its ttl: until \d{4}-.*Z\)\.$/;
    const messages: string[] = [];
    for (const [wire, id] of ids) {
      const task = await eventually(async () => {
        const read = await wire.read('unserved', id);
        return unserved.test(String(read['statusMessage'])) ? read : undefined;
      });
      expect(task['status'], wire.name).to.equal('working');
      messages.push(timeless(String(task['statusMessage'])) ?? '');
      await wire.cancel('unserved', id);
    }
    expect(messages[1]).to.equal(messages[0]);
  });

  it('C26-MTH-3: a synchronous 2026-07-28 call (no tasks extension) runs with its tool’s retry policy too', async () => {
    const reply = await modernPost(
      system.apiUrl,
      'tools/call',
      { name: 'flaky', arguments: { failures: 3 } },
      {
        bearer: keyOf('retry'),
      },
    );
    expect(reply.body.result).to.deep.include({ resultType: 'complete' });
    expect(JSON.stringify(reply.body.result)).to.contain('attempt 4');
  });
});
