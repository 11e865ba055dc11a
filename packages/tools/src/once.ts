import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';
import { sleep } from './sleep.ts';

/**
 * Stands for work that must not happen twice, like charging a card: it waits, then "commits" and returns a
 * receipt. It is declared not retry-safe, so when its worker dies mid-run the task ends `failed` with a
 * statusMessage that says so, instead of running again (invariant 6 of docs/architecture.md; the reliability tests count its runs
 * by the "side effect started" log line).
 */
export const onceTool = defineTool({
  name: 'once',
  title: 'Once',
  description:
    'Does something that must not happen twice (like charging a card): waits the given seconds, then returns a ' +
    'receipt. Not retry-safe: if its worker dies mid-run the task fails instead of running again.',
  inputSchema: z.object({
    ref: z.string().min(1).max(200).describe('What to do once, e.g. a payment reference'),
    seconds: z.number().min(0).max(3600).default(0).describe('How long the work takes, 0 to 3600 seconds'),
  }),
  taskSupport: TaskSupport.Optional,
  retrySafe: false,
  async run({ ref, seconds }, { signal, log, attempt }) {
    log.info('side effect started', { ref, attempt });
    await sleep(Math.round(seconds * 1000), signal);
    return { content: [{ type: 'text', text: `Done once: ${ref}` }] };
  },
});
