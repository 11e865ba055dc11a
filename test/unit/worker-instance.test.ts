// A worker's instance (engine lost-jobs.ts): unique per process even when a restarted container's worker has the same
// name, a valid Redis connection name, and the worker's name again for what operators read.
import { expect } from 'chai';
import { workerConnectionName, workerInstance, workerOf } from '@mcp-tasks/engine';

describe('worker instances', () => {
  it('differ for two processes of one name, and give the name back', () => {
    const [a, b] = [workerInstance('worker-vm-1'), workerInstance('worker-vm-1')];
    expect(a).to.match(/^worker-vm-1#[0-9a-f]{8}$/);
    expect(a).to.not.equal(b);
    expect(workerOf(a)).to.equal('worker-vm-1');
    // A holder of an earlier version (no instance) is named as it is.
    expect(workerOf('worker-vm-1')).to.equal('worker-vm-1');
  });

  it('are valid connection names (printable ASCII, no space) whatever the host name', () => {
    const instance = workerInstance('worker-höst name-7');
    expect(workerConnectionName('mcpt-worker-bull', instance)).to.match(/^mcpt-worker-bull:[!-~]+$/);
    expect(workerOf(instance)).to.equal('worker-h_st_name-7');
  });
});
