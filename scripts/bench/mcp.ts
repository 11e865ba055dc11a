// A lean MCP Streamable HTTP client for the bench: node:http with keep-alive, so that the load generator, which
// shares the machine's cores with the system under test, spends as little CPU per request as it can.
import { Agent, request, type ClientRequest, type IncomingMessage } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@mcp-tasks/protocol';

export class BenchRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

export class BenchClient {
  sessionId = '';
  #nextId = 1;
  readonly #url: URL;

  private constructor(
    url: string,
    private readonly agent: Agent,
    /** What the client accepts: both, as the SDK sends (tasks/result may then answer as an SSE stream), or JSON. */
    private readonly accept: string,
  ) {
    this.#url = new URL(url);
  }

  /** A client with its own MCP session (initialize + notifications/initialized). */
  static async connect(url: string, agent: Agent, jsonOnly = false): Promise<BenchClient> {
    const client = new BenchClient(url, agent, jsonOnly ? 'application/json' : 'application/json, text/event-stream');
    const { headers } = await client.#post({
      jsonrpc: '2.0',
      id: client.#nextId++,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'mcpt-bench', version: '0.1.0' },
      },
    });
    const sessionId = headers['mcp-session-id'];
    if (typeof sessionId !== 'string') throw new Error('initialize answered no Mcp-Session-Id');
    client.sessionId = sessionId;
    await client.#post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return client;
  }

  /** The same session through another api replica (sessions live in Redis: any replica serves any of them). */
  via(url: string): BenchClient {
    const client = new BenchClient(url, this.agent, this.accept);
    client.sessionId = this.sessionId;
    return client;
  }

  /** The owner of this session's tasks (no auth: the session). */
  get owner(): string {
    return `session:${this.sessionId}`;
  }

  async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    const reply = await this.#request({ jsonrpc: '2.0', id, method, params }, id);
    if (reply.error) throw new BenchRpcError(reply.error.code, reply.error.message);
    return reply.result ?? {};
  }

  /** Creates a task and returns its id. */
  async createTask(tool: string, args: Record<string, unknown>): Promise<string> {
    const result = await this.call('tools/call', { name: tool, arguments: args, task: {} });
    const task = result['task'] as { taskId?: unknown } | undefined;
    if (typeof task?.taskId !== 'string') throw new Error(`tools/call answered no task: ${JSON.stringify(result)}`);
    return task.taskId;
  }

  /** A plain tools/call (no task): one request that answers the tool's result. */
  callTool(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.call('tools/call', { name: tool, arguments: args });
  }

  /** tasks/result: blocks until the task is terminal. */
  result(taskId: string): Promise<Record<string, unknown>> {
    return this.call('tasks/result', { taskId });
  }

  /** POSTs a message and resolves with the whole body and the headers once the response ended. */
  #post(message: unknown): Promise<{ body: string; headers: Record<string, string | string[] | undefined> }> {
    return new Promise((resolve, reject) => {
      this.#send(message, reject, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      });
    });
  }

  /**
   * POSTs a request and resolves with its JSON-RPC response: at the end of a JSON body, or, in an SSE stream, as
   * soon as the response event arrives (as the SDK's client does), the rest of the stream being drained.
   */
  #request(message: unknown, id: number): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.#send(message, reject, (res) => {
        let text = '';
        let settled = false;
        const sse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (!sse || settled) return;
          // Complete events end with a blank line; look for the response among them.
          const end = text.lastIndexOf('\n\n');
          if (end === -1) return;
          const reply = findReply(text.slice(0, end), id);
          if (reply) {
            settled = true;
            resolve(reply);
          }
          text = text.slice(end + 2);
        });
        res.on('end', () => {
          if (settled) return;
          try {
            resolve(parseReply(text, id));
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      });
    });
  }

  /**
   * Sends one POST. A request that fails at once on a reused keep-alive socket is sent again on a new one: the
   * server may close an idle socket just as we reuse it (the race Node's documentation describes for
   * `request.reusedSocket`), most likely on a busy machine whose timers run late.
   */
  #send(
    message: unknown,
    reject: (error: Error) => void,
    onResponse: (res: IncomingMessage) => void,
    retried = false,
  ): ClientRequest {
    const payload = JSON.stringify(message);
    const req = request(
      {
        agent: this.agent,
        host: this.#url.hostname,
        port: this.#url.port,
        path: this.#url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: this.accept,
          'content-length': Buffer.byteLength(payload),
          ...(this.sessionId
            ? { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION }
            : {}),
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300) {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => reject(new Error(`HTTP ${status}: ${body.slice(0, 300)}`)));
          return;
        }
        onResponse(res);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      const reset = error.code === 'ECONNRESET' || error.message === 'socket hang up';
      if (reset && req.reusedSocket && !retried) this.#send(message, reject, onResponse, true);
      else reject(error);
    });
    req.end(payload);
    return req;
  }
}

interface Reply {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** The JSON-RPC response with `id`, from a JSON body or from the `data:` lines of an SSE body. */
export function parseReply(body: string, id: number): Reply {
  const trimmed = body.trimStart();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Reply;
  const reply = findReply(body, id);
  if (!reply) throw new Error(`no JSON-RPC response with id ${id} in: ${body.slice(0, 300)}`);
  return reply;
}

/** The response with `id` among the `data:` lines of SSE events (notifications and requests are skipped). */
function findReply(events: string, id: number): Reply | undefined {
  for (const line of events.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const message = JSON.parse(line.slice(5)) as Reply;
    if (message.id === id && ('result' in message || 'error' in message)) return message;
  }
  return undefined;
}

/** A keep-alive agent with one socket per concurrent client. */
export function benchAgent(sockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
}
