import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';
import { sleep } from './sleep.ts';

const STEP_MS = 100;

export const waitTool = defineTool({
  name: 'wait',
  title: 'Wait',
  description:
    'Sleeps for the given number of seconds in small steps, reporting progress; stops promptly when cancelled. ' +
    'With fail: true it ends with an isError result.',
  inputSchema: z.object({
    seconds: z.number().min(0).max(3600).describe('How long to wait, 0 to 3600 seconds'),
    fail: z.boolean().optional().describe('End with an isError result instead of success'),
  }),
  taskSupport: TaskSupport.Optional,
  async run({ seconds, fail }, { signal, progress }) {
    const totalMs = Math.round(seconds * 1000);
    const started = Date.now();
    let reported = -1;
    for (let elapsed = 0; elapsed < totalMs; elapsed = Date.now() - started) {
      signal.throwIfAborted();
      const second = Math.floor(elapsed / 1000);
      if (second !== reported) {
        reported = second;
        await progress(second, Math.ceil(seconds), `waited ${second}s of ${seconds}s`);
      }
      await sleep(Math.min(STEP_MS, totalMs - elapsed), signal);
    }
    if (fail) return { content: [{ type: 'text', text: `Failed on purpose after ${seconds}s` }], isError: true };
    return { content: [{ type: 'text', text: `Waited ${seconds}s` }] };
  },
});
