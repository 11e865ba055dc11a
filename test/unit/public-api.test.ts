// The installable package's public surface (apps/runner, published as mcp-task-runner): a name added or removed
// here is a decision, not an accident of an `export *`.
import { expect } from 'chai';
import * as runner from 'mcp-task-runner';

describe('the public API of mcp-task-runner', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(runner).sort()).to.deep.equal([
      'ChildTaskError',
      'FinalError',
      'TaskSupport',
      'defineExternalTool',
      'defineQueueTool',
      'defineTool',
      'loadTools',
      'startApi',
      'startWorker',
    ]);
  });

  it('takes the specification’s taskSupport strings', () => {
    expect(runner.TaskSupport).to.deep.equal({ Forbidden: 'forbidden', Optional: 'optional', Required: 'required' });
  });
});
