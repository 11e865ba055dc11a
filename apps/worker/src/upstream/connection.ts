// One MCP client connection to an upstream server (the official SDK's Client over a child's stdio or Streamable
// HTTP), carrying the calls in flight on it at once. The upstream's requests and notifications go to the call that
// caused them, when the wire says which (a progress token, an upstream task, the only call in flight on a
// connection that carries one principal's calls), and are refused otherwise (docs/gateway.md, "Attribution").
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode as SdkErrorCode,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
  RELATED_TASK_META_KEY,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@mcp-tasks/runtime';
import { ChildProcessTransport } from './child-transport.ts';
import type { UpstreamConfig } from './config.ts';
import { describeConnectFailure, StreamLostError } from './failures.ts';
import { boundedText, knownSecrets, maskKnown, redactKnown, redactSecrets } from './redact.ts';

/** What a call does with the upstream's requests and notifications that belong to it. */
export interface CallHooks {
  elicit(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  sample(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  log(level: string, data: unknown, logger: string | undefined): void;
  progress(progress: number, total?: number, message?: string): Promise<void>;
}

export interface ConnectionEvents {
  /** The upstream said its tool list changed. */
  onToolsChanged(connection: UpstreamConnection): void;
  /** The connection ended (the process exited, the HTTP session was lost, or close() was called). */
  onClosed(connection: UpstreamConnection): void;
}

/** A Streamable HTTP session several workers share (an affinity): joined without a new initialize. */
export interface SharedSession {
  sessionId: string;
  /** The revision its initialize agreed on (sent as MCP-Protocol-Version); unknown for a session left by a job. */
  protocolVersion?: string;
}

export interface ConnectOptions {
  /**
   * The connection carries the calls of one principal (or client session) only, so an upstream request that names
   * no call may go to the one call in flight. On a connection shared by several principals such a request is refused.
   */
  relaysUnmarked: boolean;
  join?: SharedSession;
}

const CLIENT_INFO = { name: 'mcp-task-runner-gateway', version: '0.1.0' };
/** A listing is paged by the upstream; this bounds a server that keeps answering with a next cursor. */
const MAX_LIST_PAGES = 100;
/** Stderr lines kept to explain, in the worker's log, why a child ended. */
const STDERR_TAIL_LINES = 5;
/** A broken response stream fails its call only if the answer did not come meanwhile (it was read just before). */
const LOST_STREAM_CHECK_MS = 50;

/** One call in flight on a connection. */
export class InFlightCall {
  /** Sent upstream as the call's progressToken: opaque, unrelated to our task id (which is a credential). */
  readonly progressToken = randomUUID();
  /** The upstream's task, once the call created one: its requests carry its id. */
  upstreamTaskId: string | undefined;
  /** Fires when the call's signal does, or when its response stream broke. */
  readonly signal: AbortSignal;
  #progressed = Promise.resolve();
  #pending = 0;
  readonly #lost = new AbortController();

  constructor(
    readonly hooks: CallHooks,
    signal: AbortSignal,
    readonly end: () => void,
  ) {
    this.signal = AbortSignal.any([signal, this.#lost.signal]);
  }

  progress(progress: number, total?: number, message?: string): void {
    this.#progressed = this.#progressed.then(() => this.hooks.progress(progress, total, message));
  }

  /** Settles once every progress update relayed so far has been handed on (all of it goes before the result). */
  progressed(): Promise<void> {
    return this.#progressed;
  }

  /** Sends one request of the call: while it waits for its answer, a broken response stream fails it. */
  async request<T>(sent: Promise<T>): Promise<T> {
    this.#pending++;
    try {
      return await sent;
    } finally {
      this.#pending--;
    }
  }

  /** The response stream of one of the call's requests broke: fails the call if an answer is still awaited. */
  lose(): void {
    if (this.#pending > 0) {
      this.#lost.abort(new StreamLostError('the response stream of the call broke before its answer'));
    }
  }
}

export class UpstreamConnection {
  readonly #calls = new Set<InFlightCall>();
  #http: StreamableHTTPClientTransport | undefined;
  #child: ChildProcessTransport | undefined;
  #closed = false;
  #closing = false;
  readonly #stderrTail: string[] = [];
  readonly #secrets: string[];

  private constructor(
    readonly upstream: UpstreamConfig,
    readonly client: Client,
    private readonly log: Logger,
    private readonly options: ConnectOptions,
  ) {
    this.#secrets = knownSecrets(upstream);
  }

  /**
   * Starts (stdio) or reaches (HTTP) the upstream and initializes an MCP session with it within `connectTimeoutMs`,
   * or joins the shared HTTP session `options.join` as it is. Throws an Error that says in our words what failed.
   */
  static async open(
    upstream: UpstreamConfig,
    log: Logger,
    events: ConnectionEvents,
    options: ConnectOptions,
  ): Promise<UpstreamConnection> {
    // Declared on every connection: whether a given call may relay an input request depends on the capabilities of
    // the client of its task, which the input relay checks per request.
    const client = new Client(CLIENT_INFO, { capabilities: { elicitation: { form: {} }, sampling: {} } });
    const connection = new UpstreamConnection(upstream, client, log, options);
    connection.#handle(events);
    const transport = connection.#transport();
    try {
      await client.connect(transport, { timeout: upstream.connectTimeoutMs });
      const version = options.join?.protocolVersion;
      if (version !== undefined) connection.#http?.setProtocolVersion(version);
    } catch (error) {
      // Described before it is closed: how the child ended matters only if it ended on its own.
      const reason = describeConnectFailure(upstream, error, connection.#child?.exit);
      await connection.close();
      throw new Error(reason, { cause: error });
    }
    return connection;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** It was closed by us (idle, discarded, shutdown), not by the upstream. */
  get closedByUs(): boolean {
    return this.#closing;
  }

  /** How the connection ended, in our words (`exited with code 1`); undefined while it is open. */
  get ended(): string | undefined {
    if (!this.#closed) return undefined;
    return this.#child?.exit ?? 'closed the connection';
  }

  /** The Streamable HTTP session to share with other workers (absent over stdio, or from a server without sessions). */
  get sharedSession(): SharedSession | undefined {
    const sessionId = this.#http?.sessionId;
    const protocolVersion = this.#http?.protocolVersion;
    return sessionId !== undefined && protocolVersion !== undefined ? { sessionId, protocolVersion } : undefined;
  }

  get httpSessionId(): string | undefined {
    return this.#http?.sessionId;
  }

  get inFlight(): number {
    return this.#calls.size;
  }

  /** Registers a call: the upstream's requests and notifications for it go to `hooks` until `end()`. */
  begin(hooks: CallHooks, signal: AbortSignal): InFlightCall {
    const call: InFlightCall = new InFlightCall(hooks, signal, () => this.#calls.delete(call));
    this.#calls.add(call);
    return call;
  }

  /** The upstream's tools, every page. */
  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await this.client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.upstream.connectTimeoutMs,
      });
      tools.push(...listed.tools);
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    return tools;
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

  #handle(events: ConnectionEvents): void {
    const { client, upstream, log } = this;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => events.onToolsChanged(this));
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      const { level, logger } = notification.params;
      const data = this.#logData(notification.params.data);
      // A log message names no call: it is the task's when one call alone is in flight, the worker's otherwise.
      const [only] = this.#calls;
      if (only && this.#calls.size === 1) only.hooks.log(level, data, logger);
      else log.debug('upstream log message', { upstream: upstream.name, level, data, logger });
    });
    // Progress is taken here rather than through the SDK's `onprogress`: the SDK forgets a request's progress handler
    // when its response arrives, so a last progress notification read in the same chunk as the response was lost.
    client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
      const { progressToken, progress, total } = notification.params;
      // Kept on the task and served on every read of it: cut to maxTextBytes, redacted (docs/gateway.md, "Bounds").
      const message = notification.params.message === undefined ? undefined : this.#said(notification.params.message);
      for (const call of this.#calls) {
        if (call.progressToken === progressToken) call.progress(progress, total, message);
      }
    });
    client.setRequestHandler(ElicitRequestSchema, (request) =>
      this.#relay('elicitation/create', request.params, (hooks, params) => hooks.elicit(params)),
    );
    client.setRequestHandler(CreateMessageRequestSchema, (request) =>
      this.#relay('sampling/createMessage', request.params, (hooks, params) => hooks.sample(params)),
    );
    client.onclose = () => {
      this.#closed = true;
      if (!this.#closing) {
        log.warn('upstream connection closed', {
          upstream: upstream.name,
          how: this.ended,
          stderr: this.#stderrTail,
        });
      }
      events.onClosed(this);
    };
    client.onerror = (error) =>
      log.debug('upstream transport error', { upstream: upstream.name, error: this.#redact(error.message) });
  }

  /** The call an upstream request belongs to, or why it cannot be told. */
  #callOf(method: string, params: Record<string, unknown>): InFlightCall | string {
    const meta = params['_meta'] as Record<string, { taskId?: unknown } | undefined> | undefined;
    const related = meta?.[RELATED_TASK_META_KEY]?.taskId;
    if (typeof related === 'string') {
      for (const call of this.#calls) if (call.upstreamTaskId === related) return call;
      return `${method} names an upstream task that no call in flight here follows`;
    }
    if (!this.options.relaysUnmarked) {
      return `${method} names no call, and this connection carries the calls of several principals`;
    }
    const [only] = this.#calls;
    if (!only) return `${method} outside a tool call is not relayed`;
    if (this.#calls.size > 1) return `${method} names no call, and ${this.#calls.size} calls are in flight here`;
    return only;
  }

  async #relay(
    method: string,
    params: Record<string, unknown>,
    send: (hooks: CallHooks, params: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ): Promise<Record<string, unknown> & { [key: string]: unknown }> {
    const call = this.#callOf(method, params);
    if (typeof call === 'string') {
      this.log.warn('upstream request refused', { upstream: this.upstream.name, method, reason: call });
      throw new McpError(SdkErrorCode.InvalidRequest, `${call}; it was not relayed`);
    }
    // Stored with the task and shown to its client until answered: bounded, and rid of the secrets we sent it.
    const relayed = redactKnown(forwardable(params), this.#secrets);
    const bytes = Buffer.byteLength(JSON.stringify(relayed), 'utf8');
    if (bytes > this.upstream.maxRequestBytes) {
      const reason = `${method} takes ${bytes} bytes of JSON, more than the ${this.upstream.maxRequestBytes} relayed (maxRequestBytes)`;
      this.log.warn('upstream request refused', { upstream: this.upstream.name, method, reason });
      throw new McpError(SdkErrorCode.InvalidParams, `${reason}; it was not relayed`);
    }
    try {
      return await send(call.hooks, relayed);
    } catch (error) {
      if (error instanceof McpError) throw error;
      // The reason (the client lacks the capability, did not answer in time, answered an error) goes upstream as
      // text: the upstream decides what its tool does then.
      throw new McpError(SdkErrorCode.InternalError, `${method} was not answered: ${(error as Error).message}`);
    }
  }

  #transport(): Transport {
    const { upstream, options } = this;
    if (upstream.url !== undefined) {
      this.#http = new StreamableHTTPClientTransport(new URL(upstream.url), {
        requestInit: { headers: upstream.headers },
        fetch: (url, init) => this.#fetch(url, init),
        ...(options.join ? { sessionId: options.join.sessionId } : {}),
      });
      return this.#http;
    }
    this.#child = new ChildProcessTransport({
      command: upstream.command as string,
      args: upstream.args,
      env: upstream.env,
      ...(upstream.cwd !== undefined ? { cwd: upstream.cwd } : {}),
      onStderr: (line) => {
        const text = this.#redact(line);
        this.log.debug('upstream stderr', { upstream: upstream.name, line: text });
        this.#stderrTail.push(text);
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
      },
    });
    return this.#child;
  }

  /**
   * The SDK's fetch, watching the response stream of each call's request: when it breaks before the answer came
   * (the server went away mid-call), the call is failed at once rather than left waiting for its timeout.
   */
  async #fetch(url: string | URL, init?: RequestInit): Promise<Response> {
    const response = await fetch(url, init);
    const call = init?.method === 'POST' ? this.#callOfBody(init.body) : undefined;
    if (!call || !response.body) return response;
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          controller.error(error);
          setTimeout(() => call.lose(), LOST_STREAM_CHECK_MS).unref();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  /** The call a request body belongs to: by its progress token (tools/call) or its upstream task (tasks/*). */
  #callOfBody(body: unknown): InFlightCall | undefined {
    if (typeof body !== 'string' || this.#calls.size === 0) return undefined;
    let params: { _meta?: { progressToken?: unknown }; taskId?: unknown } | undefined;
    try {
      params = (JSON.parse(body) as { params?: typeof params }).params;
    } catch {
      return undefined;
    }
    for (const call of this.#calls) {
      if (params?._meta?.progressToken === call.progressToken) return call;
      if (params?.taskId !== undefined && params.taskId === call.upstreamTaskId) return call;
    }
    return undefined;
  }

  #redact(text: string): string {
    return redactSecrets(text, this.#secrets);
  }

  /** An upstream's text as we keep or show it: rid of our secrets, cut to maxTextBytes. */
  #said(text: string): string {
    return boundedText(maskKnown(text, this.#secrets), this.upstream.maxTextBytes);
  }

  /** A log message's data for our logs: rid of our secrets, and as cut text when its JSON is over maxTextBytes. */
  #logData(data: unknown): unknown {
    const redacted = redactKnown(data, this.#secrets);
    const json = JSON.stringify(redacted) ?? '';
    return json.length > this.upstream.maxTextBytes / 3 && Buffer.byteLength(json, 'utf8') > this.upstream.maxTextBytes
      ? boundedText(json, this.upstream.maxTextBytes)
      : redacted;
  }
}

/** The upstream's request parameters without what belongs to its own hop (_meta, a task augmentation). */
function forwardable(params: Record<string, unknown>): Record<string, unknown> {
  const { _meta: _hop, task: _task, ...rest } = params;
  return rest;
}
