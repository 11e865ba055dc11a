import { expect } from 'chai';
import { ProtocolError } from '@mcp-tasks/protocol';
import { countPrimesBelow, toolRegistry } from '@mcp-tasks/tools';

describe('tool registry and demo tools', () => {
  it('lists every demo tool with its execution.taskSupport and a JSON Schema', () => {
    const listing = Object.fromEntries(toolRegistry.list().map((tool) => [tool.name, tool]));
    expect(listing['wait']?.execution).to.deep.equal({ taskSupport: 'optional' });
    expect(listing['crash']?.execution).to.deep.equal({ taskSupport: 'optional' });
    expect(listing['count_primes']?.execution).to.deep.equal({ taskSupport: 'required' });
    expect(listing['echo']?.execution).to.deep.equal({ taskSupport: 'forbidden' });
    expect(listing['wait']?.inputSchema).to.include({ type: 'object' });
    expect(listing['wait']?.inputSchema['required']).to.deep.equal(['seconds']);
  });

  it('rejects bad arguments with -32602 naming the field', () => {
    const wait = toolRegistry.get('wait');
    expect(() => toolRegistry.parseArguments(wait, { seconds: 'soon' }))
      .to.throw(ProtocolError, /seconds/)
      .with.property('code', -32602);
    expect(() => toolRegistry.parseArguments(wait, { seconds: 4000 })).to.throw(ProtocolError, /seconds/);
    expect(() => toolRegistry.get('nope')).to.throw(ProtocolError, /Unknown tool/);
  });

  it('count_primes counts correctly', async () => {
    expect(await countPrimesBelow(0)).to.equal(0);
    expect(await countPrimesBelow(3)).to.equal(1);
    expect(await countPrimesBelow(100)).to.equal(25);
    expect(await countPrimesBelow(1_000_000)).to.equal(78498);
  });

  it('wait stops promptly when its signal aborts', async () => {
    const controller = new AbortController();
    // An hour's wait, far beyond the test's timeout: only a run that stops on the signal lets the test pass.
    const running = toolRegistry.get('wait').run(
      { seconds: 3600 },
      {
        taskId: 't',
        attempt: 1,
        signal: controller.signal,
        progress: () => Promise.resolve(),
        log: { info: () => undefined, warn: () => undefined, error: () => undefined },
        elicit: () => Promise.reject(new Error('no client')),
        sample: () => Promise.reject(new Error('no client')),
        listRoots: () => Promise.reject(new Error('no client')),
        checkpoint: () => Promise.resolve(),
        lastCheckpoint: undefined,
        step: (_name, fn) => Promise.resolve(fn()),
        callTool: () => Promise.reject(new Error('no worker')),
        sleep: () => Promise.reject(new Error('no worker')),
        sleepUntil: () => Promise.reject(new Error('no worker')),
        waitForEvent: () => Promise.reject(new Error('no worker')),
        signalTask: () => Promise.reject(new Error('no worker')),
      },
    );
    setTimeout(() => controller.abort('cancelled'), 50);
    let thrown: unknown;
    try {
      await running;
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.equal('cancelled');
  });
});
