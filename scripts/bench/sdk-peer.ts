// The peer row of the bench: the same `wait` tool served by the official MCP TypeScript SDK (1.32) with its own
// task runtime, in one process with the SDK's in-memory task store. It is what a team would otherwise build on;
// it is not durable (a restart loses every task) and does not scale out (tasks live in this process's memory).
// One McpServer and transport per session, as the SDK's Streamable HTTP examples do. Configured by PORT.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const port = Number(process.env['PORT'] ?? '0');
/**
 * The SDK's tasks/result re-reads a task that is not finished yet every pollInterval (1 s by default). A no-op
 * finishes before its tasks/result arrives, so this rarely matters; 5 ms keeps a late one from costing a second.
 */
const POLL_INTERVAL_MS = 5;

const taskStore = new InMemoryTaskStore();
const transports = new Map<string, StreamableHTTPServerTransport>();

function newServer(): McpServer {
  const server = new McpServer(
    { name: 'sdk-peer', version: '1.0.0' },
    {
      capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } },
      taskStore,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  server.experimental.tasks.registerToolTask(
    'wait',
    {
      description: 'Waits the given number of seconds',
      inputSchema: { seconds: z.number().min(0).max(3600) },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ seconds }, { taskStore: store, taskRequestedTtl }) {
        const task = await store.createTask({ ttl: taskRequestedTtl ?? null, pollInterval: POLL_INTERVAL_MS });
        // The work runs beside the request, as a tool would: the answer does not wait for it.
        setTimeout(() => {
          void store
            .storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: `Waited ${seconds}s` }] })
            .catch(() => undefined);
        }, seconds * 1000);
        return { task };
      },
      getTask: (_args, { taskId, taskStore: store }) => store.getTask(taskId),
      // The store keeps what storeTaskResult was given: the CallToolResult above.
      getTaskResult: async (_args, { taskId, taskStore: store }) =>
        (await store.getTaskResult(taskId)) as CallToolResult,
    },
  );
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url === '/readyz') {
    res.writeHead(200).end('ok');
    return;
  }
  const sessionId = req.headers['mcp-session-id'];
  let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (!transport) {
    if (typeof sessionId === 'string') {
      res.writeHead(404).end();
      return;
    }
    // A request without a session: the transport answers anything but initialize with an error.
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Plain JSON answers: cheaper than the SSE answer the SDK sends by default, so the peer is measured at its best.
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        transports.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId) transports.delete(created.sessionId);
    };
    await newServer().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    console.error(`sdk peer: ${String(error)}`);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.keepAliveTimeout = 65_000;
http.listen(port, '127.0.0.1', () => console.log(`sdk peer ready on ${port}`));

const stop = () => {
  taskStore.cleanup();
  http.close();
  http.closeAllConnections();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
