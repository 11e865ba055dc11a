// A bare 2026-07-28 requester for tests: every request carries the `_meta` envelope and the routing headers, and
// the reply comes back raw (HTTP status, body, SSE messages), so tests see exactly what the wire says.
import { parseSse } from '@mcp-tasks/client';
import { eventually } from './mcp-client.ts';

export const MODERN = '2026-07-28';
export const TASKS_EXT = 'io.modelcontextprotocol/tasks';
export const WITH_TASKS = { extensions: { [TASKS_EXT]: {} } };

export interface ModernReply {
  status: number;
  headers: Headers;
  body: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
  /** Every message of an SSE answer (the last one is the response). */
  messages: Record<string, unknown>[];
}

export interface ModernOptions {
  capabilities?: Record<string, unknown>;
  id?: string | number;
  /** Headers to add or override (a value of '' removes the header). */
  headers?: Record<string, string>;
  /** Replace the whole `_meta`. */
  meta?: Record<string, unknown>;
  bearer?: string;
}

let nextId = 1;

export function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  if (method === 'tools/call') return params['name'] as string;
  if (method.startsWith('tasks/')) return params['taskId'] as string;
  return undefined;
}

export function modernRequest(
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
): { headers: Record<string, string>; body: string } {
  const meta = options.meta ?? {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {},
    'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1.0.0' },
  };
  const name = nameOf(method, params);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': name } : {}),
    ...(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
    ...options.headers,
  };
  for (const [key, value] of Object.entries(headers)) if (value === '') delete headers[key];
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: options.id ?? nextId++,
    method,
    params: { ...params, _meta: meta },
  });
  return { headers, body };
}

export async function modernPost(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
): Promise<ModernReply> {
  const { headers, body } = modernRequest(method, params, options);
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const messages = parseSse(text).map((event) => event.message);
    return { status: res.status, headers: res.headers, body: messages.at(-1) ?? {}, messages };
  }
  return {
    status: res.status,
    headers: res.headers,
    body: (text ? JSON.parse(text) : {}) as ModernReply['body'],
    messages: [],
  };
}

/** The result of a request that must succeed. */
export async function modernResult(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
): Promise<Record<string, unknown>> {
  const reply = await modernPost(url, method, params, options);
  if (!reply.body.result) throw new Error(`${method} failed: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.result;
}

/** An open SSE answer (subscriptions/listen): messages as they arrive, until `close()`. */
export async function openStream(
  url: string,
  method: string,
  params: Record<string, unknown>,
  options: ModernOptions = {},
): Promise<{ status: number; next(): Promise<Record<string, unknown>>; close(): void }> {
  const { headers, body } = modernRequest(method, params, options);
  const controller = new AbortController();
  const res = await fetch(url, { method: 'POST', headers, body, signal: controller.signal });
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const queue: Record<string, unknown>[] = [];
  return {
    status: res.status,
    async next() {
      for (;;) {
        const first = queue.shift();
        if (first) return first;
        if (!reader) throw new Error('no body');
        const { value, done } = (await reader.read()) as { value?: Uint8Array; done: boolean };
        if (done) throw new Error('the stream ended');
        buffer += decoder.decode(value, { stream: true });
        const cut = buffer.lastIndexOf('\n\n');
        if (cut < 0) continue;
        queue.push(...parseSse(buffer.slice(0, cut + 2)).map((event) => event.message));
        buffer = buffer.slice(cut + 2);
      }
    },
    close() {
      controller.abort();
    },
  };
}

/** tasks/get on `url` until `done` holds for the task (the conformance harness polls likewise). */
export function pollModernTask(
  url: string,
  taskId: string,
  done: (task: Record<string, unknown>) => boolean,
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  return eventually(async () => {
    const task = await modernResult(url, 'tasks/get', { taskId }, { capabilities: WITH_TASKS });
    return done(task) ? task : undefined;
  }, timeoutMs);
}
