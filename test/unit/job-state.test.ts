import { expect } from 'chai';
import type { JobState } from 'bullmq';
import { JOB_PHASE, reconcile, TASK_STATUSES, isTerminal, type ObservedJobState } from '@mcp-tasks/protocol';

// Every state BullMQ 6 reports; the `satisfies` line stops compiling if BullMQ's union grows or shrinks.
const BULLMQ_STATES = [
  'waiting',
  'waiting-children',
  'prioritized',
  'delayed',
  'active',
  'completed',
  'failed',
] as const;
type Exhaustive<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const listIsExhaustive: Exhaustive<(typeof BULLMQ_STATES)[number], JobState> = true;

describe('job-state mapping', () => {
  it('maps every BullMQ job state and the missing job', () => {
    expect(listIsExhaustive).to.equal(true);
    expect(Object.keys(JOB_PHASE)).to.have.members([...BULLMQ_STATES, 'unknown']);
  });

  it('T-CANCEL-3: a terminal record wins over any job state', () => {
    for (const status of TASK_STATUSES.filter(isTerminal)) {
      for (const state of Object.keys(JOB_PHASE) as ObservedJobState[]) {
        expect(reconcile({ status }, state)).to.deep.equal({ action: 'none', status });
      }
    }
  });

  it('keeps a live task live while its job is queued or running', () => {
    for (const state of ['waiting', 'waiting-children', 'prioritized', 'delayed', 'active'] as const) {
      expect(reconcile({ status: 'working' }, state).action).to.equal('none');
      expect(reconcile({ status: 'input_required' }, state)).to.deep.equal({
        action: 'none',
        status: 'input_required',
      });
    }
  });

  it('T-LIFE-5: fails a live task whose job is gone, failed or finished without a result, saying why', () => {
    const missing = reconcile({ status: 'working' }, 'unknown');
    expect(missing).to.include({ action: 'fail', status: 'failed' });
    expect(missing.action === 'fail' && missing.statusMessage).to.match(/lost/);
    const failed = reconcile({ status: 'working' }, 'failed', 'job stalled more than allowable limit');
    expect(failed.action === 'fail' && failed.statusMessage).to.contain('stalled more than allowable limit');
    expect(reconcile({ status: 'input_required' }, 'completed').action).to.equal('fail');
  });
});
