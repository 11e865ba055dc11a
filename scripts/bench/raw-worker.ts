// A raw BullMQ worker process, the baseline our worker is compared with: same job data, same result, no task
// record, no status transitions. Configured by RAW_* variables (see processes.ts).
import { countPrimesBelow } from '@mcp-tasks/tools';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const prefix = process.env['RAW_PREFIX'] ?? 'bench-raw';
const queue = process.env['RAW_QUEUE'] ?? 'tools';
const concurrency = Number(process.env['RAW_CONCURRENCY'] ?? '16');

interface RawJobData {
  tool: string;
  arguments: { below?: number };
}

/** What our `wait` tool answers for seconds: 0, and what count_primes answers: the same bytes travel back. */
async function run(job: Job<RawJobData>): Promise<unknown> {
  if (job.data.tool === 'count_primes') {
    const below = job.data.arguments.below ?? 0;
    const count = await countPrimesBelow(below);
    return {
      content: [{ type: 'text', text: `There are ${count} primes below ${below}.` }],
      structuredContent: { below, count },
    };
  }
  return { content: [{ type: 'text', text: 'Waited 0s' }] };
}

const connection = new Redis(url, { maxRetriesPerRequest: null, connectionName: `bench-raw-worker-${queue}` });
const worker = new Worker<RawJobData>(queue, run, { connection, prefix, concurrency });
worker.on('error', (error) => console.error(`raw worker error: ${error.message}`));
await worker.waitUntilReady();
console.log(`raw worker ready (queue ${queue}, concurrency ${concurrency})`);

const stop = () => {
  void worker
    .close()
    .then(() => connection.quit())
    .finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
