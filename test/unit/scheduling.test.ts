// Scheduling settings and the decisions made from them without I/O (docs/scheduling.md): backoff waits, what follows a
// failed run, operators' overrides, and the fair-order step of a weight.
import { expect } from 'chai';
import { ConfigError, fairStep, loadSchedulingSettings, SchedulingEnvSchema } from '@mcp-tasks/engine';
import {
  catalogEntryOf,
  ChildTaskError,
  defineTool,
  FinalError,
  mergeScheduling,
  retryDelayMs,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { afterFailedRun, backoffStrategy, RetryLater, RunTimeoutError } from '@mcp-tasks/worker/internals';

const retry = { attempts: 4, backoff: { type: 'exponential' as const, delayMs: 1000 }, maxDelayMs: 3000 };
const NOW = Date.parse('2026-12-03T12:00:00.000Z');

describe('scheduling settings', () => {
  it('waits fixed or doubling from the first retry, never longer than maxDelayMs', () => {
    expect([1, 2, 3].map((run) => retryDelayMs(retry, run))).to.deep.equal([1000, 2000, 3000]);
    expect(retryDelayMs({ attempts: 3, backoff: { type: 'fixed', delayMs: 250 }, maxDelayMs: 60_000 }, 5)).to.equal(
      250,
    );
  });

  it('after a failed run: retries with a message naming the attempt, the error and when the next starts', () => {
    expect(afterFailedRun({ retry }, 2, 4, new Error('disk full'), NOW)).to.deep.equal({
      retry: true,
      delayMs: 2000,
      statusMessage: 'Attempt 2 of 4 failed: disk full. Attempt 3 starts at 2026-12-03T12:00:02.000Z (in 2 s).',
    });
  });

  it('after a failed run: stops at a final error, at the last attempt, and at the attempts BullMQ granted', () => {
    expect(afterFailedRun({ retry }, 1, 4, new FinalError('never'))).to.deep.equal({
      retry: false,
      statusMessage: 'Attempt 1 of 4 failed: never. The error is final: no retry.',
    });
    // A failed child: another attempt would wait for the same child (docs/durable-execution.md).
    const child = new ChildTaskError('t-1', 'count_words', 'failed', { code: -32603, message: 'broke' });
    expect(afterFailedRun({ retry }, 1, 4, child)).to.deep.equal({
      retry: false,
      statusMessage:
        "Attempt 1 of 4 failed: Child task t-1 (tool 'count_words') failed: broke. The error is final: no retry.",
    });
    expect(afterFailedRun({ retry }, 4, 4, new Error('again'))).to.deep.equal({
      retry: false,
      statusMessage: 'Attempt 4 of 4 failed: again. No attempts left.',
    });
    // A job queued when the tool allowed 2 attempts gets no third, whatever the worker's policy says now.
    expect(afterFailedRun({ retry }, 2, 2, new Error('x')).retry).to.equal(false);
    // Without retries a plain failure keeps its own message; a timeout says so.
    expect(afterFailedRun(undefined, 1, 3, new Error('x'))).to.deep.equal({ retry: false });
    expect(afterFailedRun({ timeoutMs: 50 }, 1, 3, new RunTimeoutError(50))).to.deep.equal({
      retry: false,
      statusMessage: 'Attempt 1 of 1 timed out after 50 ms (timeoutMs)',
    });
  });

  it('BullMQ’s backoff strategy waits what the worker decided, and 1 s doubling for failures outside the tool', () => {
    expect(backoffStrategy(3, 'mcpt-retry', new RetryLater('x', 1234))).to.equal(1234);
    expect([1, 2, 3].map((made) => backoffStrategy(made, 'mcpt-retry', new Error('redis')))).to.deep.equal([
      1000, 2000, 4000,
    ]);
  });

  it('defineTool refuses invalid settings, naming the field', () => {
    expect(() =>
      defineTool({
        name: 'bad',
        description: '',
        inputSchema: z.object({}),
        concurrency: 0,
        run: () => Promise.resolve({ content: [] }),
      }),
    ).to.throw(/Tool 'bad' has invalid scheduling settings: concurrency/);
  });

  describe('a partial setting takes the defaults for the rest (issue 31)', () => {
    const declare = (settings: Record<string, unknown>) =>
      catalogEntryOf(
        defineTool({
          name: 'partial',
          description: '',
          inputSchema: z.object({}),
          ...settings,
          run: () => Promise.resolve({ content: [] }),
        }),
      ).scheduling;
    const DEFAULTS = { attempts: 1, backoff: { type: 'exponential', delayMs: 1000 }, maxDelayMs: 60_000 };

    it('retry: { attempts } alone (issue 31)', () => {
      expect(declare({ retry: { attempts: 3 } })).to.deep.equal({ retry: { ...DEFAULTS, attempts: 3 } });
    });
    it('retry: {} is the default policy (issue 31)', () => {
      expect(declare({ retry: {} })).to.deep.equal({ retry: DEFAULTS });
    });
    it('retry.backoff: { type } alone (issue 31)', () => {
      expect(declare({ retry: { backoff: { type: 'fixed' } } })).to.deep.equal({
        retry: { ...DEFAULTS, backoff: { type: 'fixed', delayMs: 1000 } },
      });
    });
    it('retry.backoff: { delayMs } alone (issue 31)', () => {
      expect(declare({ retry: { attempts: 2, backoff: { delayMs: 10 } } })).to.deep.equal({
        retry: { ...DEFAULTS, attempts: 2, backoff: { type: 'exponential', delayMs: 10 } },
      });
    });
    it('retry: { maxDelayMs } alone (issue 31)', () => {
      expect(declare({ retry: { maxDelayMs: 5 } })).to.deep.equal({ retry: { ...DEFAULTS, maxDelayMs: 5 } });
    });
    it('retry without maxDelayMs waits at most its default 60 s (issue 31)', () => {
      const policy = declare({ retry: { attempts: 20, backoff: { delayMs: 1000 } } })!.retry!;
      expect(retryDelayMs(policy, 19)).to.equal(60_000);
    });
    it('rateLimit: { max } alone takes perMs 1000 (issue 31)', () => {
      expect(declare({ rateLimit: { max: 5 } })).to.deep.equal({ rateLimit: { max: 5, perMs: 1000 } });
    });
    it('rateLimit: { perMs } alone is refused: max has no default (issue 31)', () => {
      expect(() => declare({ rateLimit: { perMs: 60_000 } })).to.throw(
        /Tool 'partial' has invalid scheduling settings: rateLimit\.max: required: the most starts per window/,
      );
    });
    it('a wrong field is still named (issue 31)', () => {
      expect(() => declare({ retry: { backoff: { type: 'linear' } } })).to.throw(/retry\.backoff\.type/);
      expect(() => declare({ retry: { attempts: 2, tries: 3 } })).to.throw(/retry/);
    });
    it('an operator’s partial retry override is a whole policy too (issue 31)', () => {
      const settings = loadSchedulingSettings(
        SchedulingEnvSchema.parse({ SCHEDULING: JSON.stringify({ tools: { '*': { retry: { attempts: 4 } } } }) }),
      );
      expect(settings.overrideFor('any')).to.deep.equal({ retry: { ...DEFAULTS, attempts: 4 } });
    });
  });

  it('operators override a tool’s settings field by field, `*` under the tool’s own entry; the catalog shows the result', () => {
    const settings = loadSchedulingSettings(
      SchedulingEnvSchema.parse({
        SCHEDULING: JSON.stringify({ tools: { '*': { timeoutMs: 100, concurrency: 9 }, gpu: { concurrency: 4 } } }),
      }),
    );
    expect(settings.overrideFor('gpu')).to.deep.equal({ timeoutMs: 100, concurrency: 4 });
    const tool = defineTool({
      name: 'gpu',
      description: '',
      inputSchema: z.object({}),
      concurrency: 2,
      rateLimit: { max: 1, perMs: 1000 },
      run: () => Promise.resolve({ content: [] }),
    });
    expect(catalogEntryOf(tool, settings.overrideFor('gpu')).scheduling).to.deep.equal({
      concurrency: 4,
      rateLimit: { max: 1, perMs: 1000 },
      timeoutMs: 100,
    });
    expect(mergeScheduling({ concurrency: 1 }, undefined)).to.deep.equal({ concurrency: 1 });
    const plain = defineTool({
      name: 'p',
      description: '',
      inputSchema: z.object({}),
      run: () => Promise.resolve({ content: [] }),
    });
    expect(catalogEntryOf(plain)).to.not.have.property('scheduling');
  });

  it('says what is wrong with SCHEDULING and SCHEDULING_FILE', () => {
    expect(() => loadSchedulingSettings(SchedulingEnvSchema.parse({ SCHEDULING: '{' }))).to.throw(
      ConfigError,
      /^SCHEDULING: not JSON/,
    );
    expect(() =>
      loadSchedulingSettings(SchedulingEnvSchema.parse({ SCHEDULING: '{"tools":{"x":{"concurrency":-1}}}' })),
    ).to.throw(ConfigError, /^SCHEDULING: .*concurrency/);
    // A weight keyed by a bare name would match no owner and change nothing.
    expect(() => loadSchedulingSettings(SchedulingEnvSchema.parse({ SCHEDULING: '{"weights":{"alice":2}}' }))).to.throw(
      ConfigError,
      /^SCHEDULING: .*principal:key:<name>/,
    );
    expect(
      loadSchedulingSettings(
        SchedulingEnvSchema.parse({ SCHEDULING: '{"weights":{"principal:key:alice":2}}' }),
      ).weightOf('principal:key:alice'),
    ).to.equal(2);
    expect(() =>
      loadSchedulingSettings(SchedulingEnvSchema.parse({ SCHEDULING_FILE: '/nonexistent/scheduling.json' })),
    ).to.throw(ConfigError, /SCHEDULING_FILE="\/nonexistent\/scheduling.json": cannot read it/);
  });

  it('a principal’s fair-order step shrinks with its weight, never below 1', () => {
    expect([1, 2, 0.5, 12, 100].map(fairStep)).to.deep.equal([12, 6, 24, 1, 1]);
  });
});
