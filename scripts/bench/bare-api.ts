// The bare-HTTP baseline of the bench: raw BullMQ behind a `node:http` JSON-RPC endpoint answering the same two
// requests as ours (task-augmented tools/call, then tasks/result), and a plain tools/call (no task: the job added and
// waited for within the one request), with its workers in processes of their own
// (raw-worker.ts). What a server with two HTTP exchanges per task can do at the least: no sessions, no records,
// no validation, no rate limits, no notifications, no audit. Configured by REDIS_URL, RAW_PREFIX, RAW_QUEUE, PORT.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const prefix = process.env['RAW_PREFIX'] ?? 'bench-raw';
const queueName = process.env['RAW_QUEUE'] ?? 'bare';
const port = Number(process.env['PORT'] ?? '0');
const TTL_MS = 3_600_000;

const connection = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'bench-bare-api' });
const eventsConnection = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'bench-bare-api-events' });
const queue = new Queue(queueName, { connection, prefix });
// One QueueEvents per process: every waiting tasks/result listens on it (BullMQ's own way to wait for a job).
const events = new QueueEvents(queueName, { connection: eventsConnection, prefix });
events.setMaxListeners(0);
await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);

interface Message {
  id?: string | number;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown>; taskId?: string; task?: unknown };
}

async function answer(message: Message): Promise<unknown> {
  switch (message.method) {
    case 'initialize':
      return {
        protocolVersion: '2025-11-25',
        capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
        serverInfo: { name: 'bare', version: '1.0.0' },
      };
    case 'tools/call': {
      const taskId = randomUUID();
      const now = new Date().toISOString();
      const job = await queue.add(
        message.params?.name ?? 'wait',
        { taskId, tool: message.params?.name, arguments: message.params?.arguments ?? {} },
        { jobId: taskId, removeOnComplete: { age: TTL_MS / 1000 } },
      );
      // A plain call: the same job, its result the answer of this request.
      if (message.params?.task === undefined) return (await job.waitUntilFinished(events)) as Record<string, unknown>;
      return {
        task: { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttl: TTL_MS, pollInterval: 1000 },
      };
    }
    case 'tasks/result': {
      const taskId = String(message.params?.taskId);
      const job = await Job.fromId(queue, taskId);
      if (!job) throw Object.assign(new Error('Task not found'), { code: -32602 });
      const result = (await job.waitUntilFinished(events)) as Record<string, unknown>;
      return { ...result, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } };
    }
    default:
      throw Object.assign(new Error('Method not found'), { code: -32601 });
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url === '/readyz') {
    res.writeHead(200).end('ok');
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Message;
  if (message.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  let body: string;
  try {
    body = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: await answer(message) });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    body = JSON.stringify({
      jsonrpc: '2.0',
      id: message.id,
      error: { code: typeof code === 'number' ? code : -32603, message: (error as Error).message },
    });
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (message.method === 'initialize') headers['mcp-session-id'] = randomUUID();
  res.writeHead(200, headers).end(body);
}

const http = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    console.error(`bare api: ${String(error)}`);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.keepAliveTimeout = 65_000;
http.listen(port, '127.0.0.1', () => console.log(`bare api ready on ${port}`));

const stop = () => {
  http.close();
  http.closeAllConnections();
  void Promise.allSettled([events.close(), queue.close()])
    .then(() => Promise.allSettled([connection.quit(), eventsConnection.quit()]))
    .finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
