#!/usr/bin/env node
// An external consumer of the `shout` tool, written against job contract v1 (docs/job-contract.md) with nothing but
// bullmq and ioredis — as a service in another language would use its BullMQ port. It takes jobs from the queue
// `ext-shout`, reports progress, and returns a CallToolResult; the runner maps that onto the MCP task.
//
//   REDIS_URL=redis://127.0.0.1:6379 REDIS_PREFIX=mcpt node scripts/external-consumer.mjs
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = process.env.REDIS_PREFIX ?? 'mcpt';
const connection = new Redis(url, { maxRetriesPerRequest: null });

const worker = new Worker(
  'ext-shout',
  async (job) => {
    // Job data, contract v1: { taskId, tool, arguments } (arguments already validated against the tool's schema).
    const { taskId, tool, arguments: args } = job.data;
    if (tool !== 'shout') throw new Error(`unexpected tool ${tool}`);
    await job.updateProgress({ progress: 1, total: 2, message: `shouting for task ${taskId}` });
    switch (args.mode) {
      case 'throw':
        throw new Error(`cannot shout "${args.text}"`);
      case 'invalid':
        return { text: 'not a CallToolResult' };
      case 'error-result':
        return { content: [{ type: 'text', text: `refused to shout "${args.text}"` }], isError: true };
      default:
        return {
          content: [{ type: 'text', text: String(args.text).toUpperCase() }],
          structuredContent: { shouted: String(args.text).toUpperCase() },
        };
    }
  },
  { connection, prefix, concurrency: 4 },
);
worker.on('ready', () => console.log(`external consumer ready on queue ext-shout (prefix ${prefix})`));
worker.on('failed', (job, error) => console.log(`job ${job?.id} failed: ${error.message}`));

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    await worker.close();
    connection.disconnect();
    process.exit(0);
  });
}
