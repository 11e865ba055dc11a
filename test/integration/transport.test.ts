// Bad input at the Streamable HTTP endpoint never crashes, hangs or loses a task: every malformed message gets
// the right HTTP status and JSON-RPC code with a message that says what is wrong (docs/protocol.md).
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { rawRequest, rawSocket, type RawReply } from '../support/raw-http.ts';

const MAX_BODY_BYTES = 65_536;
const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

/** `[[[...]]]` nested `depth` times, as JSON text (JSON.stringify itself overflows the stack at this depth). */
function nestedArrays(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

function expectTransportError(reply: RawReply, status: number, code: number, message: RegExp): void {
  expect(reply.status, reply.text).to.equal(status);
  expect(reply.headers['content-type']).to.match(/^application\/json/);
  const body = reply.json as { jsonrpc: string; id: unknown; error?: { code: number; message: string } };
  expect(body.jsonrpc).to.equal('2.0');
  expect(body.id).to.equal(null);
  expect(body.error?.code, reply.text).to.equal(code);
  expect(body.error?.message).to.match(message);
}

function expectRpcErrorReply(reply: RawReply, id: unknown, code: number, message: RegExp): void {
  expect(reply.status, reply.text).to.equal(200);
  const body = reply.json as { id: unknown; error?: { code: number; message: string } };
  expect(body.id).to.equal(id);
  expect(body.error?.code, reply.text).to.equal(code);
  expect(body.error?.message).to.match(message);
}

describe('Streamable HTTP transport: bad input (api + worker in process, real Redis)', function () {
  this.timeout(20_000);
  let system: System;
  let client: McpTestClient;
  let port: number;
  let survivor: Record<string, unknown>;

  before(async function () {
    // Starting processes on a loaded machine can take longer than a test may; startSystem has its own 60 s bound.
    this.timeout(90_000);
    system = await startSystem({ env: { MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });
    port = Number(system.apis[0]?.port);
    client = await McpTestClient.connect(system.apiUrl);
    // Created before the barrage, checked after it: bad input must not lose a task.
    survivor = await client.createTask('wait', { seconds: 1 });
  });
  after(async () => {
    await system?.stop();
  });

  function sessionHeaders(): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': String(client.sessionId),
      'mcp-protocol-version': client.protocolVersion,
    };
  }

  /** POST with the session's headers; `headers` override them. */
  function post(body: string | Buffer, headers: Record<string, string> = {}, chunked = false): Promise<RawReply> {
    return rawRequest(system.apiUrl, { body, headers: { ...sessionHeaders(), ...headers }, chunked });
  }

  function without(name: string): Record<string, string> {
    const headers = sessionHeaders();
    delete headers[name];
    return headers;
  }

  describe('JSON-RPC framing', () => {
    it('malformed JSON is HTTP 400 with -32700 naming the parse problem', async () => {
      expectTransportError(
        await post('{"jsonrpc": "2.0", "id": 1, "method": "ping"'),
        400,
        -32700,
        /^Parse error: .*JSON/,
      );
      expectTransportError(await post("{'jsonrpc': '2.0'}"), 400, -32700, /^Parse error: /);
    });

    it('an empty body is -32700', async () => {
      expectTransportError(await post(''), 400, -32700, /body is empty/);
    });

    it('invalid UTF-8 is -32700, also inside an otherwise valid message', async () => {
      expectTransportError(await post(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), 400, -32700, /not valid UTF-8/);
      const inString = Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}}'),
      ]);
      expectTransportError(await post(inString), 400, -32700, /not valid UTF-8/);
    });

    it('a body that does not decompress is -32700, not a 500; a gzip-encoded request is answered', async () => {
      expectTransportError(
        await post('not gzip at all', { 'content-encoding': 'gzip' }),
        400,
        -32700,
        /could not be decoded/,
      );
      expectTransportError(await post('not brotli', { 'content-encoding': 'br' }), 400, -32700, /could not be decoded/);
      expectTransportError(
        await post(PING, { 'content-encoding': 'bogus' }),
        415,
        -32600,
        /unsupported content encoding "bogus"/,
      );
      const zipped = await post(gzipSync(PING), { 'content-encoding': 'gzip' });
      expect(zipped.status).to.equal(200);
      expect(zipped.json).to.deep.equal({ jsonrpc: '2.0', id: 1, result: {} });
    });

    it('a JSON array (batch) is -32600: batches were removed in 2025-06-18', async () => {
      expectTransportError(await post(`[${PING}]`), 400, -32600, /batches are not supported/);
      expectTransportError(await post('[]'), 400, -32600, /batches are not supported/);
    });

    it('a number, string, boolean or null is -32600', async () => {
      for (const body of ['42', '"ping"', 'true', 'null']) {
        expectTransportError(await post(body), 400, -32600, /message must be a JSON object/);
      }
    });

    it("a missing or wrong 'jsonrpc' is -32600", async () => {
      for (const message of [
        { id: 1, method: 'ping' },
        { jsonrpc: '1.0', id: 1, method: 'ping' },
        { jsonrpc: 2, id: 1, method: 'ping' },
      ]) {
        expectTransportError(await post(JSON.stringify(message)), 400, -32600, /'jsonrpc' must be "2.0"/);
      }
    });

    it("an 'id' that is an object, boolean, float, null, too long or too large is -32600, not a silent notification", async () => {
      const ids = ['{}', '[1]', 'true', '1.5', 'null', JSON.stringify('x'.repeat(300)), '9007199254740993', '1e400'];
      for (const id of ids) {
        const reply = await post(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
        expectTransportError(reply, 400, -32600, /'id' must be a string .* or a safe integer/);
      }
      // The same shapes as responses are not accepted either.
      expectTransportError(await post('{"jsonrpc":"2.0","id":true,"result":{}}'), 400, -32600, /'id' must be/);
    });

    it("a 'method' that is not a non-empty string is -32600", async () => {
      for (const method of ['5', '{}', 'null', '""', JSON.stringify('m'.repeat(300))]) {
        expectTransportError(
          await post(`{"jsonrpc":"2.0","id":1,"method":${method}}`),
          400,
          -32600,
          /'method' must be a string of 1 to 256 characters/,
        );
      }
    });

    it("'params' that is an array, string or null is -32600", async () => {
      for (const params of ['[]', '[1,2]', '"x"', 'null', '7']) {
        expectTransportError(
          await post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":${params}}`),
          400,
          -32600,
          /'params' must be an object/,
        );
      }
    });

    it('a message that is neither request, notification nor response is -32600', async () => {
      expectTransportError(
        await post('{"jsonrpc":"2.0","id":1}'),
        400,
        -32600,
        /not a JSON-RPC request, notification or response/,
      );
    });

    it('an unknown method is -32601 on HTTP 200, with the request id', async () => {
      expectRpcErrorReply(
        await post('{"jsonrpc":"2.0","id":77,"method":"no/such"}'),
        77,
        -32601,
        /^Method not found: 'no\/such'$/,
      );
      expectRpcErrorReply(
        await post('{"jsonrpc":"2.0","id":"req-a","method":"__proto__"}'),
        'req-a',
        -32601,
        /Method not found/,
      );
      expectRpcErrorReply(await post('{"jsonrpc":"2.0","id":0,"method":"toString"}'), 0, -32601, /Method not found/);
    });

    it('T-ERR-2: invalid params of known methods are -32602 naming the field, and create nothing', async () => {
      const caller = await McpTestClient.connect(system.apiUrl);
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ arguments: { seconds: 0 } }, /Invalid params for tools\/call: name/],
        [{ name: 42, arguments: {} }, /Invalid params for tools\/call: name/],
        [{ name: 'wait', arguments: [0] }, /Invalid params for tools\/call: arguments/],
        [{ name: 'wait', arguments: 'seconds=0' }, /Invalid params for tools\/call: arguments/],
        [{ name: 'wait', arguments: { seconds: 0 }, task: { ttl: -1 } }, /Invalid params for tools\/call: task\.ttl/],
        [
          { name: 'wait', arguments: { seconds: 0 }, task: { ttl: '60000' } },
          /Invalid params for tools\/call: task\.ttl/,
        ],
        [{ name: 'wait', arguments: { seconds: 0 }, task: { ttl: 1.5 } }, /Invalid params for tools\/call: task\.ttl/],
        [{ name: 'wait', arguments: { seconds: 0 }, task: 'yes' }, /Invalid params for tools\/call: task/],
        [
          { name: 'wait', arguments: { seconds: 0 }, _meta: { progressToken: {} } },
          /Invalid params for tools\/call: _meta\.progressToken/,
        ],
      ];
      for (const [params, message] of cases) {
        const reply = await caller.rpc('tools/call', params);
        expect(reply.error?.code, JSON.stringify(params)).to.equal(-32602);
        expect(reply.error?.message).to.match(message);
      }
      expect((await caller.rpc('tasks/get', { taskId: ['x'] })).error?.code).to.equal(-32602);
      expect((await caller.rpc('tasks/list', { cursor: 5 })).error?.message).to.match(
        /Invalid params for tasks\/list: cursor/,
      );
      expect((await caller.call('tasks/list'))['tasks']).to.deep.equal([]);
    });

    it('notifications are accepted with 202 and an empty body; responses to requests we never sent are 400', async () => {
      const notifications = [
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"test"}}',
        '{"jsonrpc":"2.0","method":"notifications/no-such-thing"}',
      ];
      for (const message of notifications) {
        const reply = await post(message);
        expect(reply.status, message).to.equal(202);
        expect(reply.text).to.equal('');
      }
      const responses = [
        '{"jsonrpc":"2.0","id":5,"result":{}}',
        '{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"Method not found"}}',
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
      ];
      for (const message of responses) {
        expectTransportError(await post(message), 400, -32602, /Invalid response: no request .* is waiting/);
      }
    });
  });

  describe('HTTP rules', () => {
    it('a Content-Type other than application/json is 415; a charset parameter is fine', async () => {
      expectTransportError(
        await post(PING, { 'content-type': 'text/plain' }),
        415,
        -32600,
        /Content-Type must be application\/json/,
      );
      expectTransportError(
        await post(PING, { 'content-type': 'application/x-www-form-urlencoded' }),
        415,
        -32600,
        /Content-Type/,
      );
      expectTransportError(
        await rawRequest(system.apiUrl, { body: PING, headers: without('content-type') }),
        415,
        -32600,
        /Content-Type/,
      );
      const charset = await post(PING, { 'content-type': 'application/json; charset=utf-8' });
      expect(charset.status).to.equal(200);
    });

    it('an Accept that allows neither JSON nor SSE is 406', async () => {
      expectTransportError(
        await post(PING, { accept: 'text/html' }),
        406,
        -32600,
        /Accept must include application\/json or text\/event-stream/,
      );
      expectTransportError(await post(PING, { accept: 'image/png, text/plain;q=0.5' }), 406, -32600, /Not Acceptable/);
    });

    it(`a body over MAX_BODY_BYTES (${MAX_BODY_BYTES}) is 413, with or without Content-Length`, async () => {
      const huge = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(MAX_BODY_BYTES * 4)}"}}`;
      expectTransportError(
        await post(huge),
        413,
        -32600,
        new RegExp(`exceeds ${MAX_BODY_BYTES} bytes \\(MAX_BODY_BYTES\\)`),
      );
      expectTransportError(await post(huge, {}, true), 413, -32600, /Payload Too Large/);
      // Just under the limit is still served.
      const fits = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(MAX_BODY_BYTES - 100)}"}}`;
      expect((await post(fits)).status).to.equal(200);
    });

    it('a missing Mcp-Session-Id is 400, an unknown one 404', async () => {
      expectTransportError(
        await rawRequest(system.apiUrl, { body: PING, headers: without('mcp-session-id') }),
        400,
        -32600,
        /Mcp-Session-Id header is required/,
      );
      expectTransportError(await post(PING, { 'mcp-session-id': 'no-such-session' }), 404, -32001, /Session not found/);
      expectTransportError(await post(PING, { 'mcp-session-id': 's'.repeat(5000) }), 404, -32001, /Session not found/);
    });

    it('an unsupported MCP-Protocol-Version header is 400 naming the supported ones', async () => {
      expectTransportError(
        await post(PING, { 'mcp-protocol-version': '1999-01-01' }),
        400,
        -32600,
        /unsupported MCP-Protocol-Version '1999-01-01' \(supported: 2025-11-25/,
      );
    });

    it('PUT and PATCH on /mcp are 405 with an Allow header', async () => {
      for (const method of ['PUT', 'PATCH']) {
        const reply = await rawRequest(system.apiUrl, { method, body: PING, headers: sessionHeaders() });
        expectTransportError(reply, 405, -32600, /Method not allowed/);
        expect(reply.headers['allow']).to.include('POST');
      }
    });

    it('DNS rebinding: a foreign Host or Origin is 403; loopback names pass', async () => {
      const foreignHosts = ['evil.example.com', `evil.example.com:${port}`, `localhost.evil.example.com:${port}`];
      for (const host of foreignHosts) {
        expectTransportError(await post(PING, { host }), 403, -32600, new RegExp(`Host '${host}' is not allowed`));
      }
      for (const origin of ['http://evil.example.com', `http://evil.example.com:${port}`, 'null']) {
        expectTransportError(
          await post(PING, { origin }),
          403,
          -32600,
          new RegExp(`Origin '${origin}' is not allowed`),
        );
      }
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
        expect((await post(PING, { host })).status, host).to.equal(200);
      }
      for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`]) {
        expect((await post(PING, { origin })).status, origin).to.equal(200);
      }
    });

    it('DNS rebinding: the guard covers DELETE too, so a foreign page cannot end a session', async () => {
      const victim = await McpTestClient.connect(system.apiUrl);
      const reply = await rawRequest(system.apiUrl, {
        method: 'DELETE',
        headers: { 'mcp-session-id': String(victim.sessionId), origin: 'http://evil.example.com' },
      });
      expectTransportError(reply, 403, -32600, /Origin/);
      expect(await victim.call('ping')).to.deep.equal({});
    });
  });

  describe('robustness', () => {
    it('huge numbers are -32602 naming the field, never a crash', async () => {
      const wait = await post(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"seconds":1e400}}}',
      );
      expectRpcErrorReply(wait, 1, -32602, /Invalid arguments for tool 'wait': seconds/);
      const primes = await post(
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_primes","arguments":{"below":1e300},"task":{}}}',
      );
      expectRpcErrorReply(primes, 2, -32602, /Invalid arguments for tool 'count_primes': below/);
      const ttl = await post(
        `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{"seconds":0},"task":{"ttl":${'9'.repeat(400)}}}}`,
      );
      expectRpcErrorReply(ttl, 3, -32602, /task\.ttl/);
      const unsafe = await post(
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait","arguments":{"seconds":0},"task":{"ttl":1e300}}}',
      );
      expectRpcErrorReply(unsafe, 4, -32602, /task\.ttl/);
    });

    it('10k nested arrays are refused with -32600 before anything walks them; 60 levels are fine', async () => {
      const deep = nestedArrays(10_000);
      const ping = await post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"deep":${deep}}}`);
      expectTransportError(ping, 400, -32600, /nested deeper than 64 levels/);
      const echo = await post(
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here","extra":${nestedArrays(60)}}}}`,
      );
      expect((echo.json as { result: unknown }).result).to.deep.equal({
        content: [{ type: 'text', text: 'still here' }],
      });
      const body =
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",' +
        `"clientInfo":{"name":"deep","version":"1"},"capabilities":{"experimental":{"x":${deep}}}}}`;
      const reply = await rawRequest(system.apiUrl, { body, headers: without('mcp-session-id') });
      expectTransportError(reply, 400, -32600, /nested deeper/);
      expect(reply.headers['mcp-session-id']).to.equal(undefined);
    });

    it('garbage on the socket and a body cut short are answered or dropped without harm', async () => {
      expect(await rawSocket(system.apiUrl, 'GARBAGE\r\n\r\n')).to.match(/^HTTP\/1\.1 400 /);
      const head =
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n` +
        `Mcp-Session-Id: ${String(client.sessionId)}\r\n\r\n{"jsonrpc"`;
      expect(await rawSocket(system.apiUrl, head, { endAfterWrite: true })).to.satisfy(
        (text: string) => text === '' || text.startsWith('HTTP/1.1 4'),
      );
    });

    it('with Accept: text/event-stream only, the reply is an SSE stream carrying the JSON-RPC response', async () => {
      const dataOf = (text: string) =>
        JSON.parse(
          text
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join(''),
        ) as unknown;
      const ok = await post('{"jsonrpc":"2.0","id":"sse-1","method":"ping"}', { accept: 'text/event-stream' });
      expect(ok.status).to.equal(200);
      expect(ok.headers['content-type']).to.match(/^text\/event-stream/);
      expect(ok.text).to.match(/\n\n$/);
      expect(dataOf(ok.text)).to.deep.equal({ jsonrpc: '2.0', id: 'sse-1', result: {} });
      const failed = await post('{"jsonrpc":"2.0","id":"sse-2","method":"no/such"}', { accept: 'text/event-stream' });
      expect(failed.headers['content-type']).to.match(/^text\/event-stream/);
      expect(dataOf(failed.text)).to.deep.include({
        id: 'sse-2',
        error: { code: -32601, message: "Method not found: 'no/such'" },
      });
    });
  });

  describe('after the barrage', () => {
    it('the api is alive, answers ping, logged no unhandled error, and the task created before completed', async () => {
      const api = system.apis[0];
      expect(api?.alive()).to.equal(true);
      expect(await client.call('ping')).to.deep.equal({});
      const result = await client.call('tasks/result', { taskId: survivor['taskId'] });
      expect(result['content']).to.deep.equal([{ type: 'text', text: 'Waited 1s' }]);
      expect((await client.call('tasks/get', { taskId: survivor['taskId'] }))['status']).to.equal('completed');
      const records = api?.records() ?? [];
      expect(records.filter((line) => /unhandled|uncaught/i.test(String(line['message'])))).to.deep.equal([]);
      // The one error provoked on purpose is the over-deep initialize; nothing else may log at error level.
      const errors = records.filter((line) => line['level'] === 'error' && line['message'] !== 'initialize failed');
      expect(errors).to.deep.equal([]);
      expect(api?.logs.filter((line) => /UnhandledPromiseRejection/.test(line))).to.deep.equal([]);
    });
  });
});
