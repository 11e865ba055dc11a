// What a tool's durable calls refuse or do before anything reaches Redis (apps/worker/src/durable-run.ts): names used
// twice in one attempt, values too large or not JSON, the stored result of a step replayed, and one slot lent however
// many waits an attempt has. The store is a recorder of the writes asked for: nothing here touches Redis.
import { expect } from 'chai';
import type { DurableSnapshot, TaskStore } from '@mcp-tasks/engine';
import { LocalError, LocalErrorCode } from '@mcp-tasks/protocol';
import { attemptWaits, DurableRun } from '@mcp-tasks/worker/internals';

type Save = Parameters<TaskStore['durable']['save']>[1];

function recorder(answer: 'stored' | { value: string } = 'stored') {
  const saves: Save[] = [];
  const store = {
    durable: {
      save: (_task: unknown, write: Save) => {
        saves.push(write);
        return Promise.resolve(answer === 'stored' ? { stored: true as const } : { stored: false as const, ...answer });
      },
    },
  } as unknown as Pick<TaskStore, 'durable'>;
  return { saves, store };
}

const LIMITS = { maxBytes: 1024, maxEntries: 100, maxTotalBytes: 4096 };
const TASK = { taskId: 'task-1' };

function snapshot(steps: Record<string, string> = {}, checkpoint?: string): DurableSnapshot {
  return { checkpoint, steps: new Map(Object.entries(steps)), children: new Map(), waits: new Map() };
}

async function refusal(promise: Promise<unknown>): Promise<LocalError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).to.be.instanceOf(LocalError);
  return error as LocalError;
}

describe('durable run (ctx.checkpoint, ctx.step, ctx.callTool keys)', () => {
  it('a step runs once, stores its result as JSON and answers it as JSON has it; a later attempt gets it without running', async () => {
    const { saves, store } = recorder();
    const first = new DurableRun(store, TASK, 1, LIMITS);
    let runs = 0;
    const value = await first.step('fetch', () => {
      runs++;
      return { at: new Date(0), n: 1 };
    });
    expect(value).to.deep.equal({ at: '1970-01-01T00:00:00.000Z', n: 1 });
    expect(saves.map(({ startedAt: _at, durationMs: _ms, ...write }) => write)).to.deep.equal([
      {
        attempt: 1,
        kind: 'step',
        name: 'fetch',
        json: '{"at":"1970-01-01T00:00:00.000Z","n":1}',
        maxEntries: 100,
        maxTotalBytes: 4096,
      },
    ]);
    // Its facts for operators: when its function started and how long it ran.
    expect(saves[0]?.startedAt).to.be.a('number');
    expect(saves[0]?.durationMs).to.be.at.least(0);
    const later = new DurableRun(store, TASK, 2, LIMITS, snapshot({ fetch: '{"n":1}' }));
    expect(await later.step('fetch', () => runs++)).to.deep.equal({ n: 1 });
    expect(runs).to.equal(1);
    expect(saves).to.have.length(1);
  });

  it("a step stored first by an earlier attempt still running answers that attempt's result", async () => {
    const { store } = recorder({ value: '"theirs"' });
    expect(await new DurableRun(store, TASK, 1, LIMITS).step('s', () => 'mine')).to.equal('theirs');
  });

  it('a name is used once per attempt (step-name-reused), unless its step threw; steps and child calls are named apart', async () => {
    const run = new DurableRun(recorder().store, TASK, 1, LIMITS);
    await run.step('a', () => 1);
    const reused = await refusal(run.step('a', () => 2));
    expect(reused.code).to.equal(LocalErrorCode.StepNameReused);
    expect(reused.message).to.match(/The step name 'a' is used twice in one attempt of task task-1/);
    await refusal(run.step('b', () => Promise.reject(new LocalError(LocalErrorCode.InputError, 'boom'))));
    expect(await run.step('b', () => 3)).to.equal(3);
    expect(run.claimCall('a', undefined)).to.equal('a#1');
    expect(run.claimCall('a', 'a')).to.equal('a');
    expect(() => run.claimCall('x', 'a')).to.throw(LocalError, /The child call name 'a' is used twice/);
    run.releaseCall('a');
    expect(run.claimCall('x', 'a')).to.equal('a');
    expect((await refusal(run.step('', () => 1))).message).to.match(/needs a name of 1 to 256 characters/);
  });

  it('child calls without a key are named by their tool and their count, the same in every attempt', () => {
    const keys = (run: DurableRun) =>
      ['count', 'count', 'other', 'count'].map((tool) => run.claimCall(tool, undefined));
    const expected = ['count#1', 'count#2', 'other#1', 'count#3'];
    expect(keys(new DurableRun(recorder().store, TASK, 1, LIMITS))).to.deep.equal(expected);
    expect(keys(new DurableRun(recorder().store, TASK, 2, LIMITS))).to.deep.equal(expected);
  });

  it('a checkpoint or step result over DURABLE_MAX_BYTES, or that JSON cannot hold, is refused before it is sent', async () => {
    const { saves, store } = recorder();
    const run = new DurableRun(store, TASK, 1, LIMITS);
    const large = await refusal(run.checkpoint({ data: 'x'.repeat(2000) }));
    expect(large.code).to.equal(LocalErrorCode.DurableTooLarge);
    expect(large.message).to.match(/takes 2011 bytes of JSON; at most 1024 are kept \(DURABLE_MAX_BYTES\)/);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect((await refusal(run.checkpoint(cyclic))).message).to.match(/^The checkpoint of task task-1 is not JSON/);
    expect(saves).to.deep.equal([]);
    await run.checkpoint(undefined);
    expect(saves[0]?.json).to.equal('');
  });

  it('lastCheckpoint is what the last checkpoint saved, as JSON has it; undefined without one', () => {
    expect(new DurableRun(recorder().store, TASK, 1, LIMITS).lastCheckpoint).to.equal(undefined);
    const later = new DurableRun(recorder().store, TASK, 2, LIMITS, snapshot({}, '{"next":7}'));
    expect(later.lastCheckpoint).to.deep.equal({ next: 7 });
  });

  it('the waits of one attempt lend its slot once, and give it back when the last one ends', () => {
    let lent = 0;
    let givenBack = 0;
    const waits = attemptWaits({
      enter: () => {
        lent++;
        return () => givenBack++;
      },
    });
    const first = waits.enter();
    const second = waits.enter();
    expect(lent).to.equal(1);
    first();
    first();
    expect(givenBack).to.equal(0);
    second();
    expect(givenBack).to.equal(1);
    waits.enter()();
    expect([lent, givenBack]).to.deep.equal([2, 2]);
  });
});
