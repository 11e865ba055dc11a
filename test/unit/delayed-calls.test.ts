// The one timer behind the workers' "Running on <worker>." notes (RUNNING_NOTE_AFTER_MS): a call runs once after
// the delay unless cancelled, in the order queued, and its timer never holds the process open.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'chai';
import { DelayedCalls } from '@mcp-tasks/worker/internals';
import { repoRoot } from '../support/processes.ts';

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await settle(5);
  expect(check()).to.equal(true);
}

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

  it('never holds the process open: its timer is unreferenced', async () => {
    // A process whose only work left is a pending call a minute away ends at once, without running it.
    const script = [
      "import { DelayedCalls } from '@mcp-tasks/worker/internals';",
      'const calls = new DelayedCalls(60_000);',
      "calls.add(() => console.log('ran'));",
      "calls.cancel(calls.add(() => console.log('ran too')));",
      "console.log('pending', calls.pending);",
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).to.equal(0);
    expect(output.trim()).to.equal('pending 1');
    let ran = false;
    const short = new DelayedCalls(0);
    short.add(() => (ran = true));
    await until(() => ran);
    expect(short.pending).to.equal(0);
  });

  it('runs calls queued while others ran or were cancelled, each after its own delay, in the order they fall due', async () => {
    // The order is read from the due times, not assumed from the test's own sleeps: on a loaded machine the process
    // may be held longer than a delay between two statements, and a call queued "later" then falls due later still.
    const calls = new DelayedCalls(15);
    const ran: { name: string; at: number; ranAt: number }[] = [];
    const queue = (name: string, then?: () => void) => {
      const entry = calls.add(() => {
        ran.push({ name, at: entry.at, ranAt: Date.now() });
        then?.();
      });
      return entry;
    };
    const first = queue('first', () => queue('queued while first ran'));
    calls.cancel(queue('cancelled'));
    await settle(5);
    queue('queued after a wait');
    await until(() => ran.length === 3 && calls.pending === 0);
    expect(ran.map(({ name }) => name)).to.have.members(['first', 'queued while first ran', 'queued after a wait']);
    for (const { name, at, ranAt } of ran) expect(ranAt, name).to.be.at.least(at);
    const dueTimes = ran.map(({ at }) => at);
    expect(dueTimes, 'run in the order they fall due').to.deep.equal([...dueTimes].sort((x, y) => x - y));
    const [firstRun, fromFirst] = ['first', 'queued while first ran'].map((name) => ran.find((r) => r.name === name));
    expect(fromFirst!.at).to.be.at.least(firstRun!.ranAt + 15);
    await settle(30);
    expect(ran).to.have.length(3);
    calls.cancel(first); // already run: nothing happens
    expect(calls.pending).to.equal(0);
  });
});
