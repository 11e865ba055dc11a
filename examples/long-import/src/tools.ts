// A long import that survives its worker: it checkpoints after every batch, and an attempt that starts after a crash
// (kill -9, a lost lock, a timeout) resumes after the last checkpoint instead of starting over. A worker loads this
// module (compiled to dist/tools.js) with MCPT_TOOLS=./dist/tools.js.
import { defineTool } from 'mcp-task-runner';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

/** What the import saves after each batch: the first record not imported yet. */
interface Progress {
  next: number;
}

export const tools = [
  defineTool({
    name: 'import_records',
    title: 'Import records',
    description:
      'Imports `records` records in batches (simulated: `batchMs` per batch), saving a checkpoint after each batch; ' +
      'a worker killed mid-import leaves the rest to another worker, which resumes after the last checkpoint',
    inputSchema: z.object({
      records: z.number().int().min(1).max(1_000_000),
      batch: z.number().int().min(1).max(10_000).default(100),
      batchMs: z.number().int().min(0).max(60_000).default(500),
    }),
    outputSchema: z.object({ imported: z.number(), resumedAt: z.number(), attempt: z.number() }),
    taskSupport: 'optional',
    async run({ records, batch, batchMs }, { signal, progress, checkpoint, lastCheckpoint, attempt, log }) {
      // Undefined on a first attempt; after a crash, what the last checkpoint saved.
      const resumedAt = (lastCheckpoint as Progress | undefined)?.next ?? 0;
      if (resumedAt > 0) log.info('resuming the import after its last checkpoint', { resumedAt, attempt });
      for (let next = resumedAt; next < records;) {
        const end = Math.min(records, next + batch);
        // Import records [next, end): here, wait. A cancelled task aborts the signal: stop promptly.
        await sleep(batchMs, undefined, { signal });
        next = end;
        // Saved before the progress is reported: a crash from here on redoes no record before `next`.
        await checkpoint({ next } satisfies Progress);
        await progress(next, records, `${next} of ${records} records`);
      }
      return {
        content: [{ type: 'text', text: `Imported ${records} records (resumed at ${resumedAt}, attempt ${attempt})` }],
        structuredContent: { imported: records, resumedAt, attempt },
      };
    },
  }),
];
