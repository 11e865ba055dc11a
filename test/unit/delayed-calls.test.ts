// The one timer behind the workers' "Running on <worker>." notes (RUNNING_NOTE_AFTER_MS): a call runs once after
// the delay unless cancelled, in the order queued, and nothing stays armed when nothing is pending.
import { expect } from 'chai';
import { DelayedCalls } from '@mcp-tasks/worker/delayed-calls';

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await settle(5);
  expect(check()).to.equal(true);
}

const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe('delayed calls (worker running notes)', () => {
  it('runs each call that was not cancelled once, in the order queued, and skips the cancelled ones', async () => {
    const calls = new DelayedCalls(10);
    const ran: string[] = [];
    const entries = ['a', 'b', 'c', 'd'].map((name) => calls.add(() => ran.push(name)));
    calls.cancel(entries[1]!);
    calls.cancel(entries[3]!);
    expect(calls.pending).to.equal(2);
    await until(() => calls.pending === 0);
    expect(ran).to.deep.equal(['a', 'c']);
    await settle(30);
    expect(ran).to.deep.equal(['a', 'c']);
    calls.cancel(entries[0]!); // already run: nothing happens
    expect(calls.pending).to.equal(0);
  });

  it('leaves no timer armed once every call is cancelled, and arms one again for the next call', async () => {
    const before = timers();
    const calls = new DelayedCalls(60_000);
    const entries = [calls.add(() => undefined), calls.add(() => undefined)];
    expect(timers()).to.equal(before + 1);
    for (const entry of entries) calls.cancel(entry);
    expect(calls.pending).to.equal(0);
    expect(timers()).to.equal(before);
    let ran = false;
    const short = new DelayedCalls(0);
    short.add(() => (ran = true));
    await until(() => ran);
    expect(short.pending).to.equal(0);
  });

  it('runs calls queued while others ran or were cancelled, each after its own delay', async () => {
    const calls = new DelayedCalls(15);
    const ran: number[] = [];
    const first = calls.add(() => {
      ran.push(1);
      calls.add(() => ran.push(3));
    });
    const cancelled = calls.add(() => ran.push(0));
    await settle(5);
    calls.add(() => ran.push(2));
    calls.cancel(cancelled);
    await until(() => ran.length === 3 && calls.pending === 0);
    expect(ran).to.deep.equal([1, 2, 3]);
    calls.cancel(first);
    expect(calls.pending).to.equal(0);
  });
});
