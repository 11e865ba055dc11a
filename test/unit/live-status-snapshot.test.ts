// The live-status breakdown of /metrics: read over the records at most once per refresh period, whatever the
// scrape rate (issue 14, item 12).
import { expect } from 'chai';
import { LiveStatusSnapshot } from '@mcp-tasks/engine';
import type { TaskStatus } from '@mcp-tasks/protocol';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function counting() {
  let passes = 0;
  const read = async () => {
    passes++;
    await sleep(5);
    return { working: passes, input_required: 0, completed: 0, failed: 0, cancelled: 0 } as Record<TaskStatus, number>;
  };
  return { read, passes: () => passes };
}

describe('LiveStatusSnapshot', () => {
  it('the first read waits for a pass; reads within the period reuse it, concurrent ones share one', async () => {
    const source = counting();
    const snapshot = new LiveStatusSnapshot(source.read, 10_000);
    const [a, b] = await Promise.all([snapshot.read(), snapshot.read()]);
    expect(a.working).to.equal(1);
    expect(b.working).to.equal(1);
    for (let i = 0; i < 50; i++) await snapshot.read();
    expect(source.passes()).to.equal(1);
  });

  it('a read after the period answers the last counts at once and starts one pass in the background', async () => {
    const source = counting();
    const snapshot = new LiveStatusSnapshot(source.read, 30);
    await snapshot.read();
    await sleep(40);
    const stale = await Promise.all([snapshot.read(), snapshot.read(), snapshot.read()]);
    expect(stale.map((counts) => counts.working)).to.deep.equal([1, 1, 1]);
    await sleep(20);
    expect(source.passes()).to.equal(2);
    expect((await snapshot.read()).working).to.equal(2);
  });

  it('refreshMs 0 reads the records on every read', async () => {
    const source = counting();
    const snapshot = new LiveStatusSnapshot(source.read, 0);
    await snapshot.read();
    expect((await snapshot.read()).working).to.equal(2);
  });
});
