// A small MCP Streamable HTTP client that shows exactly what goes over the wire: used by the demo, the scripts
// and the tests. Interop with other clients is proven with the official SDK, not with this.
import { LATEST_PROTOCOL_VERSION } from '@mcp-tasks/protocol';

export interface SseEvent {
  id?: string;
  message: Record<string, unknown>;
}

export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON body, or for an SSE answer the JSON-RPC response it carried. */
  json?: unknown;
  /** The SSE events of the answer, in order (empty for a JSON answer). */
  events: SseEvent[];
}

/** Parses an SSE body into its message events (comments and events without data are skipped). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length === 0 || data.join('').trim() === '') continue;
    events.push({
      ...(id !== undefined ? { id } : {}),
      message: JSON.parse(data.join('\n')) as Record<string, unknown>,
    });
  }
  return events;
}

export interface RpcReply {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface RequestInit {
  signal?: AbortSignal;
  /** Extra HTTP headers, e.g. `{ accept: 'application/json' }` for an answer without SSE. */
  headers?: Record<string, string>;
  /** A chosen JSON-RPC id (default: the next number). */
  id?: string | number;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(`${code}: ${message}`);
  }
}

export class McpHttpClient {
  sessionId: string | undefined;
  /** Sent with every request, e.g. `{ authorization: 'Bearer <token>' }`. */
  headers: Record<string, string> = {};
  protocolVersion = LATEST_PROTOCOL_VERSION;
  #nextId = 1;

  constructor(public url: string) {}

  /**
   * A client with a session. It declares the tasks capability (it creates tasks, T-CAP-1): a session that does not
   * gets task handles for its long plain calls instead (docs/clients.md); `initialize` declares what it is given.
   */
  static async connect(
    url: string,
    protocolVersion: string = LATEST_PROTOCOL_VERSION,
    capabilities: Record<string, unknown> = { tasks: {} },
  ): Promise<McpHttpClient> {
    const client = new McpHttpClient(url);
    await client.initialize(protocolVersion, capabilities);
    return client;
  }

  async initialize(
    protocolVersion: string = LATEST_PROTOCOL_VERSION,
    capabilities: Record<string, unknown> = {},
  ): Promise<Record<string, unknown>> {
    const reply = await this.post({
      jsonrpc: '2.0',
      id: this.#nextId++,
      method: 'initialize',
      params: { protocolVersion, capabilities, clientInfo: { name: 'mcp-task-runner-client', version: '0.1.0' } },
    });
    const body = reply.json as RpcReply;
    if (!body.result) throw new RpcError(body.error?.code ?? 0, body.error?.message ?? reply.text);
    this.sessionId = reply.headers.get('mcp-session-id') ?? undefined;
    this.protocolVersion = String(body.result['protocolVersion']);
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return body.result;
  }

  /** Sends a request and returns the whole JSON-RPC reply (result or error). */
  async rpc(method: string, params?: Record<string, unknown>, init: RequestInit = {}): Promise<RpcReply> {
    const id = init.id ?? this.#nextId++;
    const reply = await this.post(
      { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) },
      init.headers,
      init.signal,
    );
    if (reply.status !== 200) throw new Error(`HTTP ${reply.status} for ${method}: ${reply.text}`);
    const body = reply.json as RpcReply;
    if (body.id !== id) throw new Error(`reply id ${String(body.id)} does not match request id ${id}`);
    return body;
  }

  /** Sends a request and returns its result, throwing RpcError for an error reply. */
  async call(
    method: string,
    params?: Record<string, unknown>,
    init: RequestInit = {},
  ): Promise<Record<string, unknown>> {
    const body = await this.rpc(method, params, init);
    if (body.error) throw new RpcError(body.error.code, body.error.message, body.error.data);
    return body.result ?? {};
  }

  /** Raw POST with the session headers; `body` as given when a string. */
  async post(body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<HttpReply> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(this.sessionId ? { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': this.protocolVersion } : {}),
        ...this.headers,
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      const events = parseSse(text);
      const messages = events.map((event) => event.message);
      // The answer is the one response on the stream; everything before it is notifications and requests.
      const json = messages.find((message) => 'result' in message || 'error' in message);
      return { status: response.status, headers: response.headers, text, json, events };
    }
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json, events: [] };
  }

  /** Creates a task for `tool` and returns its Task object. */
  async createTask(
    tool: string,
    args: Record<string, unknown>,
    task: Record<string, unknown> = {},
  ): Promise<Record<string, unknown>> {
    const result = await this.call('tools/call', { name: tool, arguments: args, task });
    return result['task'] as Record<string, unknown>;
  }

  async terminate(): Promise<void> {
    if (!this.sessionId) return;
    await fetch(this.url, { method: 'DELETE', headers: { ...this.headers, 'mcp-session-id': this.sessionId } });
  }
}
