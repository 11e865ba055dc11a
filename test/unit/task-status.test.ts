import { expect } from 'chai';
import {
  canTransition,
  isTerminal,
  sourcesOf,
  TASK_STATUSES,
  TaskStatus,
  type TaskStatus as Status,
} from '@mcp-tasks/protocol';

describe('task state machine', () => {
  const allowed: [Status, Status][] = [
    ['working', 'input_required'],
    ['working', 'completed'],
    ['working', 'failed'],
    ['working', 'cancelled'],
    ['input_required', 'working'],
    ['input_required', 'completed'],
    ['input_required', 'failed'],
    ['input_required', 'cancelled'],
  ];

  it('T-LIFE-2: allows exactly the moves of the specification', () => {
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const expected = allowed.some(([a, b]) => a === from && b === to);
        expect(canTransition(from, to), `${from} -> ${to}`).to.equal(expected);
      }
    }
  });

  it('T-LIFE-3: completed, failed and cancelled are terminal and lead nowhere', () => {
    expect(TASK_STATUSES.filter(isTerminal)).to.have.members(['completed', 'failed', 'cancelled']);
    for (const terminal of ['completed', 'failed', 'cancelled'] as const) {
      for (const to of TASK_STATUSES) expect(canTransition(terminal, to)).to.equal(false);
    }
  });

  it('T-LIFE-1: working is the start state and can reach every other status', () => {
    expect(isTerminal(TaskStatus.Working)).to.equal(false);
    expect(sourcesOf('cancelled')).to.have.members(['working', 'input_required']);
    expect(sourcesOf('working')).to.deep.equal(['input_required']);
  });
});
