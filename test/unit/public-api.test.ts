// The installable package's public surface (apps/runner, published as mcp-task-runner): a name added or removed
// here is a decision, not an accident of an `export *`.
import { expect } from 'chai';
import * as runner from 'mcp-task-runner';

describe('the public API of mcp-task-runner', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(runner).sort()).to.deep.equal([
      'ChildTaskError',
      'FinalError',
      'LocalError',
      'LocalErrorCode',
      'ProtocolError',
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

describe('the error classes of mcp-task-runner', () => {
  it('each names itself (error.name), and instanceof finds it and the class it extends', () => {
    const child = new runner.ChildTaskError('t-1', 'count_words', 'failed', { code: -32603, message: 'broke' });
    const cases: [Error, string, ...(abstract new (...args: never[]) => Error)[]][] = [
      [new runner.FinalError('never'), 'FinalError', runner.FinalError],
      [new runner.ProtocolError(-32602, 'bad'), 'ProtocolError', runner.ProtocolError],
      [child, 'ChildTaskError', runner.ChildTaskError, runner.ProtocolError],
      [new runner.LocalError(runner.LocalErrorCode.InputTimeout, 'late'), 'LocalError', runner.LocalError],
    ];
    for (const [error, name, ...classes] of cases) {
      expect(error.name, name).to.equal(name);
      expect(String(error), name).to.match(new RegExp(`^${name}: `));
      for (const type of [...classes, Error]) expect(error, `${name} instanceof ${type.name}`).to.be.instanceOf(type);
    }
    // The child's JSON-RPC error is what the parent fails with when it does not catch it.
    expect(child.toJSON()).to.deep.equal({
      code: -32603,
      message: "Child task t-1 (tool 'count_words') failed: broke",
    });
  });
});
