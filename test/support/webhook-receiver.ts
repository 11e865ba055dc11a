// A webhook receiver for tests, as a system that does not poll would write one (docs/webhooks.md): it verifies every
// request's Standard Webhooks signature with the `standardwebhooks` package, and dedupes by webhook-id. Its `mode`
// plays the receiver's outages: answering 503, resetting every connection, or holding requests without an answer.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../../scripts/lib/ports.ts';
import { track } from './resources.ts';

export type ReceiverMode = 'ok' | 'fail' | 'down' | 'hang' | { status: number; headers?: Record<string, string> };

/** One request as it came, whatever was answered. */
export interface ReceivedRequest {
  id: string;
  /** The body as JSON (undefined when its signature did not verify). */
  body: Record<string, unknown> | undefined;
  verified: boolean;
  /** What it was answered: a status, or 'reset' / 'held'. */
  answer: number | 'reset' | 'held';
  at: number;
  timestamp: string;
  path: string;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  mode: ReceiverMode;
  requests: ReceivedRequest[];
  /** The deliveries taken (answered 2xx), first receipt of each webhook-id only, in the order they came. */
  delivered(): ReceivedRequest[];
  /** Requests held open (mode 'hang') now. */
  held(): number;
  close(): Promise<void>;
}

/**
 * A receiver on a free port. `handler`: what answers in mode 'ok' (the example receiver of docs/webhooks.md, say);
 * its requests are recorded by what it answered (401: not verified). Without one, 'ok' verifies and answers 204.
 */
export async function startWebhookReceiver(
  secret: string,
  handler?: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret);
  const port = await freePort();
  const holding = new Set<ServerResponse>();
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    mode: 'ok',
    requests: [],
    delivered() {
      const seen = new Set<string>();
      return this.requests.filter((request) => {
        if (typeof request.answer !== 'number' || request.answer >= 300 || !request.verified) return false;
        if (seen.has(request.id)) return false;
        seen.add(request.id);
        return true;
      });
    },
    held: () => holding.size,
    close: () => release(),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const mode = receiver.mode;
    if (mode === 'down') {
      req.socket.destroy();
      record(req, '', 'reset');
      return;
    }
    if (mode === 'ok' && handler) {
      res.on('finish', () => {
        const entry = record(req, '', res.statusCode);
        entry.verified = res.statusCode !== 401;
      });
      handler(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (mode === 'hang') {
        holding.add(res);
        res.on('close', () => holding.delete(res));
        record(req, text, 'held');
        return;
      }
      const status = mode === 'ok' ? 204 : mode === 'fail' ? 503 : mode.status;
      const entry = record(req, text, status);
      res.writeHead(
        entry.verified || status >= 300 ? status : 401,
        mode === 'ok' || mode === 'fail' ? {} : mode.headers,
      );
      res.end(status === 503 ? 'receiver down for maintenance' : '');
    });
  });
  const record = (req: IncomingMessage, text: string, answer: ReceivedRequest['answer']): ReceivedRequest => {
    const header = (name: string) => String(req.headers[name] ?? '');
    let body: Record<string, unknown> | undefined;
    let verified = false;
    if (answer !== 'reset' && text !== '') {
      try {
        body = verifier.verify(text, {
          'webhook-id': header('webhook-id'),
          'webhook-timestamp': header('webhook-timestamp'),
          'webhook-signature': header('webhook-signature'),
        }) as Record<string, unknown>;
        verified = true;
      } catch {
        verified = false;
      }
    }
    const entry: ReceivedRequest = {
      id: header('webhook-id'),
      body,
      verified,
      answer,
      at: Date.now(),
      timestamp: header('webhook-timestamp'),
      path: req.url ?? '',
    };
    receiver.requests.push(entry);
    return entry;
  };
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const release = track(`webhook receiver :${port}`, async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });
  return receiver;
}
