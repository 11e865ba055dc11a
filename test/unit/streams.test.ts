import { expect } from 'chai';
import { eventIdOf, parseEventId } from '@mcp-tasks/api/sse';
import { WaitBudget } from '@mcp-tasks/worker/internals';

describe('SSE event ids', () => {
  it('round-trip the GET stream position and an answer stream origin', () => {
    expect(parseEventId(eventIdOf({ kind: 'session', after: '1733150000000-3' }))).to.deep.equal({
      kind: 'session',
      after: '1733150000000-3',
    });
    const answer = { kind: 'task', taskId: 't-1', taskKind: 'task', requestId: 'r:1', after: '5-0' } as const;
    expect(parseEventId(eventIdOf(answer))).to.deep.equal(answer);
    const numeric = { kind: 'task', taskId: 't-2', taskKind: 'call', requestId: 7, after: '6-1' } as const;
    expect(parseEventId(eventIdOf(numeric))).to.deep.equal(numeric);
  });

  it('reject ids we did not issue', () => {
    for (const bad of [
      '',
      '42',
      's.',
      's.abc',
      't.x.1-0',
      `t.${Buffer.from('[1,2,3]').toString('base64url')}.1-0`,
      's.1-0.2',
    ]) {
      expect(parseEventId(bad), bad).to.equal(undefined);
    }
  });
});

describe('worker wait budget', () => {
  it('lends a slot per waiting tool up to its budget, and takes each back once', () => {
    const worker = { concurrency: 4 };
    const budget = new WaitBudget(2);
    budget.attach(worker);
    const first = budget.enter();
    const second = budget.enter();
    const third = budget.enter();
    expect(worker.concurrency).to.equal(6);
    expect(budget.lent).to.equal(2);
    third();
    first();
    first();
    expect(worker.concurrency).to.equal(5);
    second();
    expect(worker.concurrency).to.equal(4);
    expect(budget.lent).to.equal(0);
  });
});
