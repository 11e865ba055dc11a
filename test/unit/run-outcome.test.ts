// What a finished run of a tool comes to (RunOutcome), decided without I/O from how the run ended, why its signal
// fired, the job and the tool's retry policy; conclude-run.ts acts on it (the integration tests see the effects).
import type { Job } from 'bullmq';
import { expect } from 'chai';
import type { ToolJobData } from '@mcp-tasks/engine';
import { defineTool, FinalError, type Scheduling } from '@mcp-tasks/protocol';
import { z } from 'zod';
import { checkToolResult, outcomeOf, type ToolRun } from '@mcp-tasks/worker/internals';

const tool = (retrySafe?: boolean) =>
  defineTool({
    name: 'work',
    description: 'works',
    inputSchema: z.object({}),
    ...(retrySafe === undefined ? {} : { retrySafe }),
    run: () => Promise.resolve({ content: [] }),
  });

/** A BullMQ job as outcomeOf reads it: its runs so far, its granted attempts, and what an earlier run stored. */
const job = (attemptsMade = 0, data: Partial<ToolJobData> = {}) =>
  ({
    attemptsMade,
    opts: { attempts: 3 },
    data: { taskId: 't1', tool: 'work', arguments: {}, ...data },
  }) as unknown as Job<ToolJobData>;

const retry: Scheduling = { retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 500 }, maxDelayMs: 60_000 } };
const result = { content: [{ type: 'text', text: 'done' }] };
const returned = (aborted?: ToolRun['aborted']): ToolRun => ({
  returned: { success: true, data: result },
  thrown: undefined,
  aborted,
});
const threw = (error: unknown, aborted?: ToolRun['aborted']): ToolRun => ({
  returned: undefined,
  thrown: error,
  aborted,
});
const TOKEN = 'lock-token';

describe('the outcome of a run', () => {
  it('a result completes the task, even one that came after a cancel (the cancelled status stands)', () => {
    for (const aborted of [undefined, 'cancelled', 'shutdown'] as const) {
      expect(outcomeOf(returned(aborted), { job: job(), token: TOKEN }, tool(), undefined)).to.deep.equal({
        kind: 'completed',
        result,
      });
    }
  });

  it('an invalid result fails the task, saying why, and is not retried', () => {
    const run: ToolRun = {
      returned: checkToolResult({ content: 'not blocks' }),
      thrown: undefined,
      aborted: undefined,
    };
    const outcome = outcomeOf(run, { job: job(), token: TOKEN }, tool(), retry);
    expect(outcome.kind).to.equal('failed');
    expect(String((outcome as { error: unknown }).error)).to.match(/it returned an invalid CallToolResult/);
  });

  it('an error is retried under the retry policy while attempts are left, and only with the job token', () => {
    const error = new Error('flaky');
    const outcome = outcomeOf(threw(error), { job: job(0), token: TOKEN }, tool(), retry);
    expect(outcome).to.include({ kind: 'retryLater', error, run: 1, delayMs: 500 });
    expect((outcome as { statusMessage: string }).statusMessage).to.match(/^Attempt 1 of 3 failed: flaky\. Attempt 2/);
    expect(outcomeOf(threw(error), { job: job(2), token: TOKEN }, tool(), retry)).to.deep.equal({
      kind: 'failed',
      error,
      statusMessage: 'Attempt 3 of 3 failed: flaky. No attempts left.',
    });
    expect(outcomeOf(threw(error), { job: job(0), token: undefined }, tool(), retry).kind).to.equal('failed');
    const final = new FinalError('never');
    expect(outcomeOf(threw(final), { job: job(0), token: TOKEN }, tool(), retry)).to.include({ kind: 'failed' });
    expect(outcomeOf(threw(error), { job: job(0), token: TOKEN }, tool(), undefined)).to.deep.equal({
      kind: 'failed',
      error,
      statusMessage: undefined,
    });
  });

  it('a timeout is a failed run, whatever the tool did after its signal fired', () => {
    const scheduling: Scheduling = { ...retry, timeoutMs: 50 };
    for (const run of [returned('timeout'), threw(new Error('aborted'), 'timeout')]) {
      const outcome = outcomeOf(run, { job: job(0), token: TOKEN }, tool(), scheduling);
      expect(outcome.kind).to.equal('retryLater');
      expect((outcome as { statusMessage: string }).statusMessage).to.match(/^Attempt 1 of 3 timed out after 50 ms/);
    }
  });

  it('a tool stopped by a cancel or its task gone is stopped; by a lost lock, left to the next attempt', () => {
    const stoppedBy = (aborted: ToolRun['aborted']) =>
      outcomeOf(threw(new Error('aborted'), aborted), { job: job(), token: TOKEN }, tool(), retry);
    expect(stoppedBy('cancelled')).to.deep.equal({ kind: 'stopped', reason: 'cancelled' });
    expect(stoppedBy('gone')).to.deep.equal({ kind: 'stopped', reason: 'gone' });
    expect(stoppedBy('lock-lost')).to.deep.equal({ kind: 'lockLost' });
  });

  it('a tool stopped by shutdown is handed back, unless it is not retry-safe and has no upstream task to follow', () => {
    const shutdown = threw(new Error('aborted'), 'shutdown');
    expect(outcomeOf(shutdown, { job: job(), token: TOKEN }, tool(), undefined)).to.deep.equal({ kind: 'handedBack' });
    expect(outcomeOf(shutdown, { job: job(), token: TOKEN }, tool(false), undefined)).to.deep.equal({
      kind: 'interrupted',
    });
    const following = job(1, { upstreamTask: { upstream: 'up', taskId: 'u1', attemptsMade: 1 } });
    expect(outcomeOf(shutdown, { job: following, token: TOKEN }, tool(false), undefined)).to.deep.equal({
      kind: 'handedBack',
    });
    // An upstream task of an earlier, failed run is not followed: the retry calls the tool afresh.
    const stale = job(2, { upstreamTask: { upstream: 'up', taskId: 'u1', attemptsMade: 1 } });
    expect(outcomeOf(shutdown, { job: stale, token: TOKEN }, tool(false), undefined).kind).to.equal('interrupted');
    // Without the job's token the job cannot be moved back: the tool is only stopped.
    expect(outcomeOf(shutdown, { job: job(), token: undefined }, tool(), undefined)).to.deep.equal({
      kind: 'stopped',
      reason: 'shutdown',
    });
  });
});
