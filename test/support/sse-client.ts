// Reads an SSE answer as it arrives, so a test can act on an event (answer an elicitation, kill a replica) while
// the stream is still open.
import { parseSse, type SseEvent } from '@mcp-tasks/client';
import { track } from './resources.ts';

export class SseConnection {
  readonly events: SseEvent[] = [];
  status = 0;
  #waiters = new Set<() => void>();
  #controller = new AbortController();
  #ended = false;
  #release: () => Promise<void> = () => Promise.resolve();

  static async open(
    url: string,
    init: { method?: string; headers: Record<string, string>; body?: string },
  ): Promise<SseConnection> {
    const connection = new SseConnection();
    connection.#release = track(`sse ${url}`, () => connection.close());
    const response = await fetch(url, { ...init, signal: connection.#controller.signal });
    connection.status = response.status;
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
      connection.#ended = true;
      await connection.#release();
      throw new Error(`expected an SSE answer, got HTTP ${response.status}: ${await response.text()}`);
    }
    void connection.#pump(response.body);
    return connection;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The first event (from `from` on) that matches, waiting up to `timeoutMs` for it. */
  async next(matches: (event: SseEvent) => boolean, timeoutMs = 10_000, from = 0): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(matches);
      if (found) return found;
      if (this.#ended)
        throw new Error(
          `stream ended without the expected event; got ${JSON.stringify(this.events.map((e) => e.message))}`,
        );
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `no expected event within ${timeoutMs} ms; got ${JSON.stringify(this.events.map((e) => e.message))}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#waiters.add(done);
      });
    }
  }

  /** Resolves when the server ends the stream. */
  async finished(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#ended) {
      if (Date.now() > deadline) throw new Error(`stream still open after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    this.#controller.abort();
    this.#ended = true;
    await this.#release();
  }

  async #pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        const cut = buffer.lastIndexOf('\n\n');
        if (cut === -1) continue;
        this.events.push(...parseSse(buffer.slice(0, cut)));
        buffer = buffer.slice(cut + 2);
        this.#wake();
      }
    } catch {
      // aborted or connection lost: the stream has ended either way
    } finally {
      this.#ended = true;
      this.#wake();
      void this.#release();
    }
  }

  #wake(): void {
    for (const waiter of this.#waiters) waiter();
    this.#waiters.clear();
  }
}

/** Opens `tasks/result` for `taskId` on an initialized 2025-11-25 session, asking for an SSE answer. */
export function openTaskResultStream(
  client: { url: string; sessionId: string | undefined },
  taskId: string,
  id: string | number,
): Promise<SseConnection> {
  return SseConnection.open(client.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': String(client.sessionId),
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }),
  });
}
