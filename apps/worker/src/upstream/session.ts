// One MCP client connection to an upstream server (the official SDK's Client over stdio or Streamable HTTP). A call
// holds a session alone while it runs, so the upstream's input requests and log messages on it belong to that call.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode as SdkErrorCode,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@mcp-tasks/engine';
import type { UpstreamConfig } from './config.ts';

/** What the call holding a session does with the upstream's requests and notifications. */
export interface CallHooks {
  elicit(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  sample(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  log(level: string, data: unknown, logger: string | undefined): void;
  progress(token: string | number, progress: number, total?: number, message?: string): void;
}

export interface SessionEvents {
  /** The upstream said its tool list changed. */
  onToolsChanged(): void;
  /** The connection ended (the process exited, the HTTP session was lost, or close() was called). */
  onClosed(session: UpstreamSession): void;
}

const CLIENT_INFO = { name: 'mcp-task-runner-gateway', version: '0.1.0' };
const STDERR_TAIL_LINES = 5;
const STDERR_LINE_LIMIT = 300;
/** A listing is paged by the upstream; this bounds a server that keeps answering with a next cursor. */
const MAX_LIST_PAGES = 100;

export class UpstreamSession {
  #hooks: CallHooks | undefined;
  #http: StreamableHTTPClientTransport | undefined;
  #closed = false;
  #closing = false;
  readonly #stderrTail: string[] = [];

  private constructor(
    readonly upstream: UpstreamConfig,
    readonly client: Client,
    private readonly log: Logger,
  ) {}

  /**
   * Starts (stdio) or reaches (HTTP) the upstream and initializes an MCP session with it. `rejoin`: an HTTP session
   * another process opened, taken over as it is (no initialize: the server knows it already).
   */
  static async open(
    upstream: UpstreamConfig,
    log: Logger,
    events: SessionEvents,
    rejoin?: string,
  ): Promise<UpstreamSession> {
    // Declared on every connection: whether a given call may relay an input request depends on the capabilities of
    // the client of its task, which the input relay checks per request.
    const client = new Client(CLIENT_INFO, { capabilities: { elicitation: { form: {} }, sampling: {} } });
    const session = new UpstreamSession(upstream, client, log);
    const transport = session.#transport(rejoin);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => events.onToolsChanged());
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      const { level, data, logger } = notification.params;
      if (session.#hooks) session.#hooks.log(level, data, logger);
      else log.debug('upstream log message', { upstream: upstream.name, level, data, logger });
    });
    // Progress is taken here rather than through the SDK's `onprogress`: the SDK forgets a request's progress handler
    // when its response arrives, so a last progress notification read in the same chunk as the response was lost.
    client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
      const { progressToken, progress, total, message } = notification.params;
      session.#hooks?.progress(progressToken, progress, total, message);
    });
    client.setRequestHandler(ElicitRequestSchema, async (request) =>
      session.#relay('elicitation/create', (hooks) => hooks.elicit(forwardable(request.params))),
    );
    client.setRequestHandler(CreateMessageRequestSchema, async (request) =>
      session.#relay('sampling/createMessage', (hooks) => hooks.sample(forwardable(request.params))),
    );
    client.onclose = () => {
      session.#closed = true;
      if (!session.#closing) {
        log.warn('upstream connection closed', { upstream: upstream.name, stderr: session.#stderrTail });
      }
      events.onClosed(session);
    };
    client.onerror = (error) =>
      log.debug('upstream transport error', { upstream: upstream.name, error: error.message });
    try {
      await client.connect(transport);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new Error(
        `could not connect to upstream '${upstream.name}': ${(error as Error).message}${session.stderrNote()}`,
      );
    }
    return session;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The Streamable HTTP session id the server gave (absent over stdio, or from a server without sessions). */
  get httpSessionId(): string | undefined {
    return this.#http?.sessionId;
  }

  /** The upstream's tools, every page. */
  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await this.client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...listed.tools);
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    return tools;
  }

  /** Routes the upstream's requests and log messages to `hooks` until the returned function is called. */
  attach(hooks: CallHooks): () => void {
    this.#hooks = hooks;
    return () => {
      if (this.#hooks === hooks) this.#hooks = undefined;
    };
  }

  /** The last lines the upstream process wrote to stderr, for a status message; empty for HTTP. */
  stderrNote(): string {
    return this.#stderrTail.length === 0 ? '' : ` (its last stderr: ${this.#stderrTail.join(' | ')})`;
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.client.close().catch(() => undefined);
  }

  /** Ends the HTTP session on the server too (DELETE), then closes; best effort. */
  async terminate(): Promise<void> {
    await this.#http?.terminateSession().catch(() => undefined);
    await this.close();
  }

  async #relay(
    method: string,
    send: (hooks: CallHooks) => Promise<Record<string, unknown>>,
  ): Promise<Record<string, unknown> & { [key: string]: unknown }> {
    const hooks = this.#hooks;
    if (!hooks) throw new McpError(SdkErrorCode.InvalidRequest, `${method} outside a tool call is not relayed`);
    try {
      return await send(hooks);
    } catch (error) {
      if (error instanceof McpError) throw error;
      // The reason (the client lacks the capability, did not answer in time, answered an error) goes upstream as
      // text: the upstream decides what its tool does then.
      throw new McpError(SdkErrorCode.InternalError, `${method} was not answered: ${(error as Error).message}`);
    }
  }

  #transport(rejoin: string | undefined): Transport {
    const { upstream } = this;
    if (upstream.url !== undefined) {
      this.#http = new StreamableHTTPClientTransport(new URL(upstream.url), {
        requestInit: { headers: upstream.headers },
        ...(rejoin !== undefined ? { sessionId: rejoin } : {}),
      });
      return this.#http;
    }
    const transport = new StdioClientTransport({
      command: upstream.command as string,
      args: [...upstream.args],
      env: { ...upstream.env },
      ...(upstream.cwd !== undefined ? { cwd: upstream.cwd } : {}),
      stderr: 'pipe',
    });
    // The upstream's stderr: debug logs, and its last lines explain a crash in the task's statusMessage.
    transport.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        const text = line.trim();
        if (text === '') continue;
        this.log.debug('upstream stderr', { upstream: upstream.name, line: text });
        this.#stderrTail.push(text.slice(0, STDERR_LINE_LIMIT));
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
      }
    });
    return transport;
  }
}

/** The upstream's request parameters without what belongs to its own hop (_meta, a task augmentation). */
function forwardable(params: Record<string, unknown>): Record<string, unknown> {
  const { _meta: _hop, task: _task, ...rest } = params;
  return rest;
}
