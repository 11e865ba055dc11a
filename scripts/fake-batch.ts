// A fake batch system for the `batch_report` demo tool and its tests (`pnpm fake-batch`): accepts report jobs over
// HTTP on 127.0.0.1, works through the rows for a while, then calls back (when given a callback URL and token) or
// just exposes its status for polling. Jobs over FAKE_BATCH_MAX_ROWS fail; jobs can be cancelled. State is in memory.
//
//   POST /jobs             {rows, idempotencyKey?, callback?: {url, token}} -> 202 job (200 for a known key)
//   GET  /jobs/:id         -> job {id, state: running|succeeded|failed|cancelled, rows, rowsDone, report?, error?}
//   POST /jobs/:id/cancel  -> 200 job
//   GET  /jobs             -> every job with debug details (callbacks sent, cancel requests, the callback token)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';

const HOST = process.env['FAKE_BATCH_HOST'] ?? '127.0.0.1';
const PORT = Number(process.env['FAKE_BATCH_PORT'] ?? 4010);
const ROW_MS = Number(process.env['FAKE_BATCH_ROW_MS'] ?? 20);
const MAX_ROWS = Number(process.env['FAKE_BATCH_MAX_ROWS'] ?? 1_000_000);
const PROGRESS_EVERY_MS = 300;

interface BatchJob {
  id: string;
  idempotencyKey: string | undefined;
  rows: number;
  rowsDone: number;
  state: 'running' | 'succeeded' | 'failed' | 'cancelled';
  report?: string;
  error?: string;
  callback?: { url: string; token: string };
  startedAt: number;
  lastProgressAt: number;
  cancelRequests: number;
  callbacks: { type: string; status: number | string }[];
}

const jobs = new Map<string, BatchJob>();
const byKey = new Map<string, BatchJob>();
let baseUrl = '';

function view(job: BatchJob) {
  return {
    id: job.id,
    state: job.state,
    rows: job.rows,
    rowsDone: job.rowsDone,
    statusUrl: `${baseUrl}/jobs/${job.id}`,
    cancelUrl: `${baseUrl}/jobs/${job.id}/cancel`,
    ...(job.report !== undefined ? { report: job.report } : {}),
    ...(job.error !== undefined ? { error: job.error } : {}),
  };
}

function tick(): void {
  const now = Date.now();
  for (const job of jobs.values()) {
    if (job.state !== 'running') continue;
    const elapsed = now - job.startedAt;
    if (job.rows > MAX_ROWS) {
      if (elapsed < 200) continue;
      job.state = 'failed';
      job.error = `row limit exceeded: ${job.rows} rows asked, this batch system takes at most ${MAX_ROWS}`;
      void report(job);
      continue;
    }
    const done = Math.min(job.rows, Math.floor(elapsed / ROW_MS));
    if (done >= job.rows) {
      job.rowsDone = job.rows;
      job.state = 'succeeded';
      job.report = `Report over ${job.rows} rows: sum of row numbers = ${(job.rows * (job.rows + 1)) / 2}`;
      void report(job);
    } else if (done !== job.rowsDone) {
      job.rowsDone = done;
      if (job.callback && now - job.lastProgressAt >= PROGRESS_EVERY_MS) {
        job.lastProgressAt = now;
        void send(job, {
          type: 'progress',
          progress: done,
          total: job.rows,
          message: `Batch job ${job.id}: ${done} of ${job.rows} rows`,
        }).catch(() => undefined);
      }
    }
  }
}

/** The final callback, retried with backoff on network errors and 5xx answers (as real webhook senders do). */
async function report(job: BatchJob): Promise<void> {
  if (!job.callback) return;
  const payload =
    job.state === 'succeeded'
      ? { type: 'result', result: { content: [{ type: 'text', text: job.report }] } }
      : { type: 'failure', message: job.error };
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      const status = await send(job, payload);
      if (status < 500) return;
    } catch {
      // retried below
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
  }
}

async function send(job: BatchJob, payload: Record<string, unknown>): Promise<number> {
  const callback = job.callback;
  if (!callback) return 0;
  try {
    const response = await fetch(callback.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${callback.token}` },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(5000),
    });
    await response.body?.cancel();
    job.callbacks.push({ type: String(payload['type']), status: response.status });
    return response.status;
  } catch (error) {
    job.callbacks.push({ type: String(payload['type']), status: (error as Error).message });
    throw error;
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const parts = path.split('/').filter(Boolean);
  if (req.method === 'POST' && path === '/jobs') {
    const body = await readJson(req);
    const rows = body['rows'];
    if (typeof rows !== 'number' || !Number.isInteger(rows) || rows < 0) {
      answer(res, 400, { error: 'rows must be a whole number >= 0' });
      return;
    }
    const key = typeof body['idempotencyKey'] === 'string' ? body['idempotencyKey'] : undefined;
    const known = key === undefined ? undefined : byKey.get(key);
    if (known) {
      answer(res, 200, view(known));
      return;
    }
    const callback = body['callback'] as { url?: unknown; token?: unknown } | undefined;
    const job: BatchJob = {
      id: `batch-${randomUUID().slice(0, 8)}`,
      idempotencyKey: key,
      rows,
      rowsDone: 0,
      state: 'running',
      startedAt: Date.now(),
      lastProgressAt: 0,
      cancelRequests: 0,
      callbacks: [],
      ...(typeof callback?.url === 'string' && typeof callback.token === 'string'
        ? { callback: { url: callback.url, token: callback.token } }
        : {}),
    };
    jobs.set(job.id, job);
    if (key !== undefined) byKey.set(key, job);
    console.log(`job ${job.id}: ${rows} rows, ${job.callback ? 'callback' : 'polled'}`);
    answer(res, 202, view(job));
    return;
  }
  if (req.method === 'GET' && path === '/jobs') {
    answer(res, 200, { jobs: [...jobs.values()].map((job) => ({ ...job, ...view(job) })) });
    return;
  }
  const job = parts[0] === 'jobs' && parts[1] ? jobs.get(parts[1]) : undefined;
  if (!job) {
    answer(res, 404, { error: 'no such job' });
    return;
  }
  if (req.method === 'GET' && parts.length === 2) {
    answer(res, 200, view(job));
    return;
  }
  if (req.method === 'POST' && parts[2] === 'cancel' && parts.length === 3) {
    job.cancelRequests++;
    if (job.state === 'running') job.state = 'cancelled';
    console.log(`job ${job.id}: cancel requested (${job.state})`);
    answer(res, 200, view(job));
    return;
  }
  answer(res, 404, { error: 'no such route' });
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => answer(res, 400, { error: String(error) }));
});
const timer = setInterval(tick, 50);
server.listen(PORT, HOST, () => {
  const { port } = server.address() as AddressInfo;
  baseUrl = `http://${HOST}:${port}`;
  console.log(`fake batch system listening on ${baseUrl} (${ROW_MS} ms per row, at most ${MAX_ROWS} rows)`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    clearInterval(timer);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
