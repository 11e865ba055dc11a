// Server-sent events on an HTTP response, and the event ids that let a client resume a stream on any replica.
import type { Response } from 'express';
import { TaskKind, type JsonRpcId } from '@mcp-tasks/protocol';

export class SseWriter {
  readonly #res: Response;
  readonly #keepAlive: NodeJS.Timeout;

  /**
   * `keepAliveMs` (SSE_KEEPALIVE_MS): a `:` comment line this often, so that proxies and load balancers do not cut
   * a long stream that has nothing to say (C26-SSE-2).
   */
  constructor(res: Response, keepAliveMs: number) {
    this.#res = res;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      // Proxies such as nginx would otherwise hold events back.
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), keepAliveMs);
    res.on('close', () => clearInterval(this.#keepAlive));
  }

  get closed(): boolean {
    return this.#res.writableEnded || this.#res.destroyed;
  }

  send(message: Record<string, unknown>, eventId?: string): void {
    this.#write(`${eventId ? `id: ${eventId}\n` : ''}event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  end(): void {
    clearInterval(this.#keepAlive);
    if (!this.closed) this.#res.end();
  }

  #write(chunk: string): void {
    if (!this.closed) this.#res.write(chunk);
  }
}

/** What a resumable stream is: the session's GET stream, or the answer stream of one request about one task. */
export type StreamPosition =
  | { kind: 'session'; after: string }
  | { kind: 'task'; taskId: string; taskKind: TaskKind; requestId: JsonRpcId; after: string };

const STREAM_ID = /^\d+-\d+$/;

/** Event ids are "s.<stream id>" on the GET stream and "t.<task, request>.<stream id>" on an answer stream. */
export function eventIdOf(position: StreamPosition): string {
  if (position.kind === 'session') return `s.${position.after}`;
  const origin = Buffer.from(JSON.stringify([position.taskId, position.requestId, position.taskKind])).toString(
    'base64url',
  );
  return `t.${origin}.${position.after}`;
}

export function parseEventId(eventId: string): StreamPosition | undefined {
  const parts = eventId.split('.');
  if (parts[0] === 's' && parts.length === 2 && STREAM_ID.test(parts[1] ?? ''))
    return { kind: 'session', after: parts[1] as string };
  if (parts[0] !== 't' || parts.length !== 3 || !STREAM_ID.test(parts[2] ?? '')) return undefined;
  try {
    const origin = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(origin) || origin.length !== 3) return undefined;
    const [taskId, requestId, taskKind] = origin as unknown[];
    if (typeof taskId !== 'string' || (typeof requestId !== 'string' && typeof requestId !== 'number'))
      return undefined;
    if (taskKind !== TaskKind.Task && taskKind !== TaskKind.PlainToolCall) return undefined;
    return { kind: 'task', taskId, taskKind, requestId, after: parts[2] as string };
  } catch {
    return undefined;
  }
}
