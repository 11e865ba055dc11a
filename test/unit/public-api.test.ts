// The installable package's public surface (apps/runner, published as mcp-task-runner): a name added or removed
// here is a decision, not an accident of an `export *`.
import { expect } from 'chai';
import * as runner from 'mcp-task-runner';

describe('the public API of mcp-task-runner', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(runner).sort()).to.deep.equal([
      'ChildTaskError',
      'FinalError',
      'NonDeterministicCallError',
      'TaskSupport',
      'defineExternalTool',
      'defineQueueTool',
      'defineTool',
      'loadTools',
      'startApi',
      'startWorker',
    ]);
  });

  it('NonDeterministicCallError: its own name, a LocalError with its code, the key and both calls', () => {
    const error = new runner.NonDeterministicCallError(
      't-1',
      'square#1',
      { tool: 'square', arguments: { n: 1 } },
      {
        tool: 'square',
        arguments: { n: 3 },
      },
    );
    expect(error).to.be.instanceOf(Error);
    expect(error.name).to.equal('NonDeterministicCallError');
    expect(error.code).to.equal('non-deterministic-call');
    expect(error).to.include({ taskId: 't-1', key: 'square#1' });
    expect(error.message).to.match(/it was 'square' \{"n":1\}, it is now 'square' \{"n":3\}/);
    expect(error.message).to.match(/make them in the same order in every attempt, or pass a key/);
  });

  it('takes the specification’s taskSupport strings', () => {
    expect(runner.TaskSupport).to.deep.equal({ Forbidden: 'forbidden', Optional: 'optional', Required: 'required' });
  });
});
