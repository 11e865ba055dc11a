// A demo of a tool served outside this codebase: its jobs go to the BullMQ queue `ext-shout`, which our workers never
// read; scripts/external-consumer.mjs (plain bullmq, none of our packages) serves it under job contract v1.
import { defineQueueTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

export const shoutTool = defineQueueTool({
  name: 'shout',
  title: 'Shout (external consumer)',
  description:
    'Upper-cases the text. Served by an external consumer of the BullMQ queue "ext-shout" ' +
    '(scripts/external-consumer.mjs); without one running, tasks wait until their ttl ends.',
  inputSchema: z.object({
    text: z.string().max(10_000).describe('The text to shout'),
    mode: z
      .enum(['ok', 'error-result', 'throw', 'invalid'])
      .optional()
      .describe('Demo of the contract: an isError result, a thrown error or an invalid return value'),
  }),
  taskSupport: TaskSupport.Optional,
});
