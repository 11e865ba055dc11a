// A demo of an external tool: the report is computed by a batch system reached over HTTP (scripts/fake-batch.ts
// plays one), which calls back with the result or is polled for it. Configured by BATCH_SYSTEM_URL.
import { defineExternalTool, TaskSupport, type ExternalStatus } from '@mcp-tasks/protocol';
import { z } from 'zod';

const REQUEST_TIMEOUT_MS = 10_000;

const BatchJobSchema = z.looseObject({
  id: z.string(),
  state: z.enum(['running', 'succeeded', 'failed', 'cancelled']),
  rows: z.number(),
  rowsDone: z.number(),
  statusUrl: z.string(),
  cancelUrl: z.string(),
  report: z.string().optional(),
  error: z.string().optional(),
});

export const batchReportTool = defineExternalTool({
  name: 'batch_report',
  title: 'Batch report',
  description:
    'Builds a report over the given number of rows on the batch system at BATCH_SYSTEM_URL. The batch system ' +
    'reports back by callback (or is polled), so no worker waits meanwhile; cancelling the task cancels the batch job.',
  inputSchema: z.object({
    rows: z.number().int().min(0).max(10_000_000).describe('Rows to process'),
    delivery: z
      .enum(['callback', 'poll'])
      .optional()
      .describe('How the result comes back; default: callback when the worker has a callback URL, else poll'),
  }),
  taskSupport: TaskSupport.Optional,
  external: {
    async submit({ rows, delivery }, { taskId, callback, signal }) {
      const base = batchSystemUrl();
      const mode = delivery ?? (callback ? 'callback' : 'poll');
      if (mode === 'callback' && !callback) {
        throw new Error('delivery "callback" needs CALLBACK_SECRET and CALLBACK_BASE_URL on the worker');
      }
      const job = await request(`${base}/jobs`, signal, {
        method: 'POST',
        body: JSON.stringify({
          kind: 'report',
          rows,
          idempotencyKey: taskId, // a worker that dies after submitting re-submits: the batch system dedupes
          ...(mode === 'callback' && callback ? { callback } : {}),
        }),
      });
      return {
        externalId: job.id,
        mode,
        statusUrl: job.statusUrl,
        cancelUrl: job.cancelUrl,
        statusMessage: `Batch job ${job.id} runs over ${rows} rows; ${mode === 'callback' ? 'it reports back when done' : 'polling its status'}.`,
      };
    },
    async poll(ref, { signal }): Promise<ExternalStatus> {
      const job = await request(ref.statusUrl ?? '', signal, { method: 'GET' });
      switch (job.state) {
        case 'running':
          return {
            state: 'running',
            progress: job.rowsDone,
            total: job.rows,
            message: `${job.rowsDone} of ${job.rows} rows`,
          };
        case 'succeeded':
          return { state: 'completed', result: { content: [{ type: 'text', text: job.report ?? '' }] } };
        case 'failed':
          return { state: 'failed', message: job.error ?? 'the batch job failed without a message' };
        case 'cancelled':
          return { state: 'failed', message: 'the batch job was cancelled on the batch system' };
      }
    },
  },
});

function batchSystemUrl(): string {
  const url = process.env['BATCH_SYSTEM_URL'];
  if (!url) {
    throw new Error(
      'BATCH_SYSTEM_URL is not set on the worker: start a batch system (e.g. `pnpm fake-batch`) and set ' +
        'BATCH_SYSTEM_URL=http://127.0.0.1:4010',
    );
  }
  return url.replace(/\/+$/, '');
}

async function request(url: string, signal: AbortSignal, init: RequestInit): Promise<z.infer<typeof BatchJobSchema>> {
  const response = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`the batch system answered ${response.status} at ${url}: ${text.slice(0, 200)}`);
  return BatchJobSchema.parse(JSON.parse(text));
}
