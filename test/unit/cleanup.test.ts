import { expect } from 'chai';
import { CleanupStack } from '@mcp-tasks/runtime';

/** A release step that finishes only when the test lets it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('CleanupStack', () => {
  it('releases newest first; a failing step is reported and the rest still run', async () => {
    const stack = new CleanupStack();
    const order: string[] = [];
    const failures: string[] = [];
    stack.add('a', 'a', (name) => void order.push(name));
    stack.add('b', 'b', () => {
      throw new Error('b failed');
    });
    stack.add('c', 'c', (name) => Promise.resolve(void order.push(name)));
    await stack.releaseAll((name, error) => failures.push(`${name}: ${(error as Error).message}`));
    expect(order).to.deep.equal(['c', 'a']);
    expect(failures).to.deep.equal(['b: b failed']);
  });

  it('a second releaseAll while one runs joins it: neither resolves before every step is released', async () => {
    const stack = new CleanupStack();
    const slow = gate();
    const released: string[] = [];
    stack.add('slow', 'slow', async (name) => {
      await slow.promise;
      released.push(name);
    });
    stack.add('fast', 'fast', (name) => void released.push(name));
    // Two loops would share the steps out: the first would take 'fast', find the stack empty and resolve while
    // the second still waited on 'slow'.
    const done: string[] = [];
    const one = stack.releaseAll().then(() => done.push('one'));
    const other = stack.releaseAll().then(() => done.push('other'));
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(done, 'calls resolved while a step was still being released').to.deep.equal([]);
    slow.open();
    await Promise.all([one, other]);
    expect(released).to.deep.equal(['fast', 'slow']);
  });

  it('releases what was added after an earlier release finished', async () => {
    const stack = new CleanupStack();
    const released: string[] = [];
    stack.add('early', 'early', (name) => void released.push(name));
    await stack.releaseAll();
    stack.add('late', 'late', (name) => void released.push(name));
    await stack.releaseAll();
    expect(released).to.deep.equal(['early', 'late']);
  });
});
