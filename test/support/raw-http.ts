// Raw HTTP for transport tests: node:http sends exactly the headers given (Host included), which fetch cannot.
import { request } from 'node:http';
import { connect } from 'node:net';
import { parseSse, type HttpReply } from '@mcp-tasks/client';

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length). */
  chunked?: boolean;
}

export interface RawReply extends Omit<HttpReply, 'headers'> {
  headers: Record<string, string | string[] | undefined>;
}

/** One request on its own connection (no keep-alive, so nothing is left open). */
export function rawRequest(url: string, options: RawRequest = {}): Promise<RawReply> {
  const target = new URL(url);
  const body = options.body === undefined ? undefined : Buffer.from(options.body);
  const headers: Record<string, string> = { ...options.headers };
  if (body && !options.chunked) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'POST',
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (String(res.headers['content-type']).startsWith('text/event-stream')) {
            const events = parseSse(text);
            const json = events
              .map((event) => event.message)
              .find((message) => 'result' in message || 'error' in message);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, events });
            return;
          }
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, events: [] });
        });
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

/**
 * Writes `data` on a bare TCP connection, optionally ends the connection early, and resolves with whatever the
 * server answered before closing (possibly nothing).
 */
export function rawSocket(
  url: string,
  data: string,
  { endAfterWrite = false, timeoutMs = 5000 } = {},
): Promise<string> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, timeoutMs);
    socket.on('connect', () => {
      socket.write(data);
      if (endAfterWrite) socket.end();
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the server answered or closed is the expected end of these exchanges.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}
