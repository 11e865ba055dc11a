// An HTTP proxy in front of a Streamable HTTP MCP server that records every JSON-RPC message clients POST to it, with
// the Mcp-Session-Id it carried: the HTTP counterpart of test/fixtures/upstream/wiretap.mjs. Answers (JSON or SSE)
// are streamed back untouched.
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { track } from './resources.ts';

export interface RecordedMessage {
  sessionId: string | undefined;
  headers: IncomingHttpHeaders;
  message: Record<string, unknown>;
  /** A tick of the proxy's clock when the message arrived: one tick per message and per answer that ended. */
  at: number;
  /** The tick when the answer to its POST ended (undefined while it streams). */
  answeredAt?: number;
}

export interface RecordingProxy {
  url: string;
  /** Every message posted so far, oldest first. */
  sent: RecordedMessage[];
  stop: () => Promise<void>;
}

/** Listens on a free port of 127.0.0.1 and forwards to `target` (an http URL whose path is kept). */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const sent: RecordedMessage[] = [];
  // Ticks order what the proxy saw (a message arrived, an answer ended) without reading a wall clock.
  let clock = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const recorded = req.method === 'POST' && body.length > 0 ? record(sent, req.headers, body, () => ++clock) : [];
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.on('end', () => {
            const tick = ++clock;
            for (const message of recorded) message.answeredAt = tick;
          });
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      // A client that goes away (a killed worker) ends its upstream request too.
      res.on('close', () => forward.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stop = track(`recording proxy (port ${port})`, async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${port}${upstream.pathname}`, sent, stop };
}

function record(
  sent: RecordedMessage[],
  headers: IncomingHttpHeaders,
  body: Buffer,
  tick: () => number,
): RecordedMessage[] {
  const header = headers['mcp-session-id'];
  const sessionId = Array.isArray(header) ? header[0] : header;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString());
  } catch {
    return []; // Not JSON: the server answers it; nothing to record.
  }
  const recorded = (Array.isArray(parsed) ? parsed : [parsed]).map((message) => ({
    sessionId,
    headers,
    message: message as Record<string, unknown>,
    at: tick(),
  }));
  sent.push(...recorded);
  return recorded;
}
