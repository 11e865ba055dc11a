// The api writes its JSON answers without express's res.json (responses.ts, sendJson): on the wire they must be
// what res.json sends, status, headers and bytes, including headers set before and HEAD requests.
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { sendJson } from '@mcp-tasks/api/responses';

interface Wire {
  status: number;
  headers: string[];
  body: string;
}

describe('sendJson: what res.json sends, without express (in-process express app)', () => {
  let server: Server;
  let base: string;
  const values: Record<string, unknown> = {
    result: { jsonrpc: '2.0', id: 1, result: { task: { taskId: 't-1', status: 'working', ttl: 60_000 } } },
    error: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Bad Request: “quotes”, ü, 😀 and \u2028' } },
    empty: {},
  };

  before(async () => {
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false); // as the api (app.ts)
    app.all('/:via/:value/:status', (req, res) => {
      const value = values[String(req.params['value'])];
      const status = Number(req.params['status']);
      if (req.query['session'] !== undefined) res.set('Mcp-Session-Id', 'abc');
      if (req.params['via'] === 'express') res.status(status).json(value);
      else sendJson(res, status, value);
    });
    server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function fetchRaw(method: string, path: string): Promise<Wire> {
    return new Promise((resolve, reject) => {
      const req = request(`${base}${path}`, { method, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          // Every header but Date, in the order sent.
          const headers: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            if (res.rawHeaders[i]?.toLowerCase() !== 'date')
              headers.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
          }
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('latin1') });
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  for (const method of ['POST', 'GET', 'HEAD']) {
    for (const value of Object.keys(values)) {
      for (const status of [200, 400, 404]) {
        for (const query of ['', '?session']) {
          it(`${method} ${value} ${status}${query ? ' with a header set before' : ''}`, async () => {
            const ours = await fetchRaw(method, `/ours/${value}/${status}${query}`);
            const theirs = await fetchRaw(method, `/express/${value}/${status}${query}`);
            expect(ours).to.deep.equal(theirs);
            expect(ours.headers).to.include('Content-Type: application/json; charset=utf-8');
          });
        }
      }
    }
  }
});
