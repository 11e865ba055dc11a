// CORS on /mcp (C26-COEX-6): preflights and answer headers over plain HTTP, then a real browser (Debian's chromium
// driven by playwright-core) on a page of another origin on 127.0.0.1 calling the api with fetch in both revisions;
// a page on an origin not in ALLOWED_ORIGINS is refused; with authentication on, preflights pass without a token.
// Browser traffic targets 127.0.0.1 only.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { BrowserContext } from 'playwright-core';
import { launchChromium, skipWithoutChromium } from '../support/browser.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { rawRequest } from '../support/raw-http.ts';
import { track } from '../support/resources.ts';

/** A page server on its own port of 127.0.0.1: another origin than the api's. */
async function pageServer(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>client</title>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const close = track(`page server ${port}`, async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });
  return { origin: `http://127.0.0.1:${port}`, close };
}

/** What the page reads of a JSON-RPC answer, plain JSON or the last message of an SSE answer. */
const READ_SCRIPT = `window.readRpc = async function (res) {
  const text = await res.text();
  if (!(res.headers.get('content-type') || '').startsWith('text/event-stream')) return JSON.parse(text);
  const data = text.split('\\n').filter(function (line) { return line.startsWith('data:'); });
  return JSON.parse((data[data.length - 1] || 'data: {}').slice(5));
};`;

interface Rpc {
  result?: {
    protocolVersion?: string;
    task?: { taskId?: string };
    status?: string;
    resultType?: string;
    isError?: boolean;
  };
}

const preflight = (url: string, origin: string, method: string, headers: string) =>
  rawRequest(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('C26-COEX-6: CORS for browser clients on /mcp (ALLOWED_ORIGINS; real api and worker)', function () {
  this.timeout(60_000);
  let system: System;
  let allowed: Awaited<ReturnType<typeof pageServer>>;
  let other: Awaited<ReturnType<typeof pageServer>>;

  before(async () => {
    [allowed, other] = await Promise.all([pageServer(), pageServer()]);
    system = await startSystem({ env: { ALLOWED_ORIGINS: allowed.origin, CORS_MAX_AGE_SECONDS: '321' } });
  });
  after(async () => {
    await system?.stop();
    await allowed?.close();
    await other?.close();
  });

  describe('over HTTP', () => {
    it('C26-COEX-6: a preflight from an allowed origin is 204 and allows the methods and the headers of both revisions', async () => {
      const asked = 'content-type, authorization, mcp-method, mcp-name, mcp-param-region, x-other';
      const reply = await preflight(system.apiUrl, allowed.origin, 'POST', asked);
      expect(reply.status).to.equal(204);
      expect(reply.headers['access-control-allow-origin']).to.equal(allowed.origin);
      expect(String(reply.headers['vary'])).to.match(/\bOrigin\b/);
      expect(reply.headers['access-control-allow-methods']).to.equal('GET, POST, DELETE');
      expect(reply.headers['access-control-max-age']).to.equal('321');
      expect(reply.headers['access-control-allow-credentials']).to.equal(undefined);
      const allowedHeaders = String(reply.headers['access-control-allow-headers'])
        .split(',')
        .map((name) => name.trim().toLowerCase());
      expect(allowedHeaders).to.include.members([
        'content-type',
        'accept',
        'authorization',
        'mcp-session-id',
        'mcp-protocol-version',
        'last-event-id',
        'mcp-method',
        'mcp-name',
        'mcp-param-region',
      ]);
      // Only Mcp-Param-* names are echoed; anything else the page asks for stays refused.
      expect(allowedHeaders).not.to.include('x-other');
    });

    it('C26-COEX-6: a preflight from an origin not allowed is refused with 403 and carries no CORS header', async () => {
      for (const origin of [other.origin, 'http://evil.example.com']) {
        const reply = await preflight(system.apiUrl, origin, 'POST', 'content-type');
        expect(reply.status, origin).to.equal(403);
        expect(reply.headers['access-control-allow-origin'], origin).to.equal(undefined);
      }
    });

    it('C26-COEX-6: answers to an allowed origin carry its origin and expose the session id; others get none', async () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'cors', version: '1' } },
      });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const reply = await rawRequest(system.apiUrl, { headers: { ...headers, origin: allowed.origin }, body });
      expect(reply.status).to.equal(200);
      expect(reply.headers['access-control-allow-origin']).to.equal(allowed.origin);
      expect(String(reply.headers['access-control-expose-headers'])).to.match(/Mcp-Session-Id, MCP-Protocol-Version/);
      // A client that is no browser sends no Origin and gets no CORS header (but the same Vary).
      const plain = await rawRequest(system.apiUrl, { headers, body });
      expect(plain.status).to.equal(200);
      expect(plain.headers['access-control-allow-origin']).to.equal(undefined);
      expect(String(plain.headers['vary'])).to.match(/\bOrigin\b/);
      // An OPTIONS that is no preflight is still not a method of the endpoint.
      const options = await rawRequest(system.apiUrl, { method: 'OPTIONS', headers: { origin: allowed.origin } });
      expect(options.status).to.equal(405);
    });

    it('C26-COEX-6: /admin and /metrics get no CORS (operators use them same-origin or from Prometheus)', async () => {
      const base = system.apiUrl.replace(/\/mcp$/, '');
      const reply = await preflight(`${base}/metrics`, allowed.origin, 'GET', 'authorization');
      expect(reply.headers['access-control-allow-origin']).to.equal(undefined);
    });
  });

  describe('in a browser', () => {
    let context: BrowserContext;
    let release: () => Promise<void>;

    before(async function () {
      skipWithoutChromium(this);
      ({ context, release } = await launchChromium());
    });
    after(async () => {
      await release?.();
    });

    it('C26-COEX-6: a page on an allowed origin initializes, creates a task and polls it (2025-11-25), and calls a tool on 2026-07-28', async () => {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`${allowed.origin}/`);
      // The page's JSON reader goes in as source text: tsx would name a function kept in a const with a helper
      // (__name) the page does not have.
      await page.addScriptTag({ content: READ_SCRIPT });
      const outcome = await page.evaluate(async (api) => {
        const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
        const read = (globalThis as unknown as { readRpc: (res: Response) => Promise<Rpc> }).readRpc;
        const init = await fetch(api, {
          method: 'POST',
          headers: base,
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '1' } },
          }),
        });
        const sessionId = init.headers.get('mcp-session-id');
        const version = (await read(init)).result?.protocolVersion;
        const session = { ...base, 'mcp-session-id': String(sessionId), 'mcp-protocol-version': '2025-11-25' };
        const initialized = await fetch(api, {
          method: 'POST',
          headers: session,
          body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        });
        const created = await read(
          await fetch(api, {
            method: 'POST',
            headers: session,
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 2,
              method: 'tools/call',
              params: { name: 'wait', arguments: { seconds: 0 }, task: { ttl: 60_000 } },
            }),
          }),
        );
        const taskId = created.result?.task?.taskId;
        const polled = await read(
          await fetch(api, {
            method: 'POST',
            headers: session,
            body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId } }),
          }),
        );
        const modern = await fetch(api, {
          method: 'POST',
          headers: {
            ...base,
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': 'wait',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 4,
            method: 'tools/call',
            params: {
              name: 'wait',
              arguments: { seconds: 0 },
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientCapabilities': {},
              },
            },
          }),
        });
        const called = await read(modern);
        const ended = await fetch(api, { method: 'DELETE', headers: session });
        return {
          sessionId,
          version,
          initialized: initialized.status,
          taskId,
          taskStatus: polled.result?.status,
          modernStatus: modern.status,
          resultType: called.result?.resultType,
          isError: called.result?.isError,
          deleted: ended.status,
        };
      }, system.apiUrl);
      expect(outcome.sessionId).to.be.a('string').and.not.equal('');
      expect(outcome.version).to.equal('2025-11-25');
      expect(outcome.initialized).to.equal(202);
      expect(outcome.taskId).to.be.a('string');
      expect(outcome.taskStatus).to.be.oneOf(['working', 'completed']);
      expect(outcome).to.include({ modernStatus: 200, resultType: 'complete', deleted: 204 });
      expect(outcome.isError).to.not.equal(true);
    });

    it('C26-COEX-6: a page on an origin not in ALLOWED_ORIGINS cannot call the api (its preflight is 403)', async () => {
      const page = await context.newPage();
      try {
        await page.goto(`${other.origin}/`);
        const outcome = await page.evaluate(async (api) => {
          try {
            const res = await fetch(api, {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
              body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
            });
            return `answered ${res.status}`;
          } catch (error) {
            return `refused: ${(error as Error).name}`;
          }
        }, system.apiUrl);
        expect(outcome).to.equal('refused: TypeError');
      } finally {
        await page.close();
      }
    });
  });
});

describe('C26-COEX-6: CORS with authentication on (API keys; a loopback bind without ALLOWED_ORIGINS)', function () {
  this.timeout(60_000);
  const KEY = 'cors-test-key-0123456789abcdef';
  const ORIGIN = 'http://localhost:5173';
  let system: System;

  before(async () => {
    system = await startSystem({ workers: 0, env: { AUTH_API_KEYS: `page:${KEY}` } });
  });
  after(async () => {
    await system?.stop();
  });

  it('C26-COEX-6: a preflight needs no token; a 401 carries the origin and exposes WWW-Authenticate; a token is served', async () => {
    const reply = await preflight(system.apiUrl, ORIGIN, 'POST', 'authorization, content-type');
    expect(reply.status).to.equal(204);
    expect(reply.headers['access-control-allow-origin']).to.equal(ORIGIN);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'cors', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json', origin: ORIGIN };
    const refused = await rawRequest(system.apiUrl, { headers, body });
    expect(refused.status).to.equal(401);
    expect(refused.headers['access-control-allow-origin']).to.equal(ORIGIN);
    expect(String(refused.headers['access-control-expose-headers'])).to.include('WWW-Authenticate');
    const served = await rawRequest(system.apiUrl, { headers: { ...headers, authorization: `Bearer ${KEY}` }, body });
    expect(served.status).to.equal(200);
    expect(served.headers['access-control-allow-origin']).to.equal(ORIGIN);
  });
});
