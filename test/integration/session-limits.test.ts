// What one client can make the api hold through sessions (issue 14, item 1), through real apis (in process) and a real
// Redis: initialize is rate-limited per principal and per address, live sessions are capped per principal and per
// address (DELETE and idle expiry free a slot, use keeps it), a session stores a fixed-size projection of its
// initialize, and requests that block until a task ends count against MAX_STREAMS_PER_SESSION as streams do.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { eventually, McpTestClient, sleep, type RpcReply } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { rawRequest } from '../support/raw-http.ts';

const ALICE_KEY = `alice-${randomUUID()}`;
const BOB_KEY = `bob-${randomUUID()}`;
const CAROL_KEY = `carol-${randomUUID()}`;
const DAVE_KEY = `dave-${randomUUID()}`;

function initializeBody(capabilities: Record<string, unknown> = {}, clientInfo?: Record<string, unknown>) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities,
      clientInfo: clientInfo ?? { name: 'session-limits-test', version: '1.0.0' },
    },
  };
}

/** An initialize with these headers (a token, an X-Forwarded-For address): the new session id, or the error. */
async function initialize(
  url: string,
  headers: Record<string, string>,
  body: unknown = initializeBody(),
): Promise<{ sessionId?: string; error?: RpcReply['error'] }> {
  const client = new McpTestClient(url);
  client.headers = headers;
  const reply = await client.post(body);
  expect(reply.status, reply.text).to.equal(200);
  const json = reply.json as RpcReply;
  if (json.error) return { error: json.error };
  return { sessionId: reply.headers.get('mcp-session-id') ?? undefined };
}

function deleteSession(url: string, sessionId: string, headers: Record<string, string> = {}) {
  return rawRequest(url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId, ...headers } });
}

function clientOf(url: string, sessionId: string, headers: Record<string, string>): McpTestClient {
  const client = new McpTestClient(url);
  client.sessionId = sessionId;
  client.protocolVersion = '2025-11-25';
  client.headers = headers;
  return client;
}

const auditRecords = (system: System) =>
  system.apis.flatMap((api) => api.records()).filter((record) => record['audit'] === true);

describe('session limits with API keys (2 api replicas; initialize per principal, live sessions per principal)', function () {
  this.timeout(60_000);
  const IDLE_MS = 2000;
  let system: System;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const url = (i: number) => String(system.apis[i % system.apis.length]?.url);

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: {
        AUTH_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY},carol:${CAROL_KEY},dave:${DAVE_KEY}`,
        RATE_LIMIT_WINDOW_MS: '60000',
        RATE_LIMIT_INITIALIZE_PER_PRINCIPAL: '4',
        MAX_SESSIONS_PER_PRINCIPAL: '2',
        SESSION_IDLE_TTL_MS: String(IDLE_MS),
      },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('T-SEC-3: initialize is rate-limited per principal across replicas (RATE_LIMIT_INITIALIZE_PER_PRINCIPAL); a refused one stores nothing', async () => {
    // Four in the window, on alternating replicas, each ended at once so that the session cap plays no part.
    for (let i = 0; i < 4; i++) {
      const { sessionId, error } = await initialize(url(i), bearer(ALICE_KEY));
      expect(error, `initialize ${i + 1}`).to.equal(undefined);
      expect((await deleteSession(url(i), String(sessionId), bearer(ALICE_KEY))).status).to.equal(204);
    }
    const sessionsBefore = await system.redis.keys(`${system.prefix}:session:*`);
    const { error } = await initialize(url(0), bearer(ALICE_KEY));
    expect(error?.code).to.equal(-32029);
    expect(error?.message).to.match(
      /^Rate limit exceeded: more than 4 initialize requests by this requestor in 60000 ms \(RATE_LIMIT_INITIALIZE_PER_PRINCIPAL\); retry after \d+ ms$/,
    );
    expect(error?.data).to.deep.include({ limit: 'initialize-principal', max: 4, windowMs: 60000 });
    expect(await system.redis.keys(`${system.prefix}:session:*`)).to.have.members(sessionsBefore);
    // Another principal on the same address is not affected.
    expect((await initialize(url(1), bearer(BOB_KEY))).error).to.equal(undefined);
    const refusal = await eventually(() =>
      auditRecords(system).find((r) => r['reason'] === 'rate_limited' && r['method'] === 'initialize'),
    );
    expect(refusal).to.deep.include({ principal: 'principal:key:alice', scope: 'initialize-principal' });
    const counters = await system.redis.hgetall(`${system.prefix}:security-counters`);
    expect(Number(counters['throttled_requests'])).to.be.at.least(1);
  });

  it('T-RSRC-1: live sessions per principal are capped (MAX_SESSIONS_PER_PRINCIPAL) across replicas; DELETE frees a slot at once', async () => {
    const first = await initialize(url(0), bearer(CAROL_KEY));
    const second = await initialize(url(1), bearer(CAROL_KEY));
    expect([first.error, second.error]).to.deep.equal([undefined, undefined]);
    const refused = await initialize(url(0), bearer(CAROL_KEY));
    expect(refused.error?.code).to.equal(-32029);
    expect(refused.error?.message).to.equal(
      'Too many sessions: this requestor already holds 2 live sessions (MAX_SESSIONS_PER_PRINCIPAL); end unused ' +
        'ones with DELETE, or wait until they expire (SESSION_IDLE_TTL_MS after their last request)',
    );
    expect(refused.error?.data).to.deep.equal({ limit: 'sessions_per_principal', max: 2 });
    expect((await deleteSession(url(1), String(first.sessionId), bearer(CAROL_KEY))).status).to.equal(204);
    const members = await system.redis.zrange(`${system.prefix}:owner-sessions:principal:key:carol`, '0', '-1');
    expect(members).to.deep.equal([second.sessionId]);
    expect((await initialize(url(0), bearer(CAROL_KEY))).error).to.equal(undefined);
    const refusal = auditRecords(system).find((r) => r['reason'] === 'too_many_sessions');
    expect(refusal).to.deep.include({ principal: 'principal:key:carol', method: 'initialize', address: '127.0.0.1' });
  });

  it(`T-RSRC-1: a session in use keeps its slot; an idle one frees it soon after it expires (SESSION_IDLE_TTL_MS ${IDLE_MS} ms)`, async () => {
    const busy = await initialize(url(0), bearer(DAVE_KEY));
    const idle = await initialize(url(1), bearer(DAVE_KEY));
    expect([busy.error, idle.error]).to.deep.equal([undefined, undefined]);
    const client = clientOf(url(1), String(busy.sessionId), bearer(DAVE_KEY));
    // Well past the moment both first entries stop counting (idle timeout and a quarter): only use keeps one.
    const started = Date.now();
    while (Date.now() - started < IDLE_MS * 1.25 + 1000) {
      expect(await client.call('ping')).to.deep.equal({});
      await sleep(200);
    }
    expect(await system.redis.exists(`${system.prefix}:session:${String(idle.sessionId)}`)).to.equal(0);
    expect((await initialize(url(0), bearer(DAVE_KEY))).error, 'the idle slot is free').to.equal(undefined);
    const refused = await initialize(url(1), bearer(DAVE_KEY));
    expect(refused.error?.data, 'the busy session still counts').to.deep.equal({
      limit: 'sessions_per_principal',
      max: 2,
    });
  });
});

describe('session limits without authentication (2 api replicas; per address, stored size, blocking waits)', function () {
  this.timeout(60_000);
  let system: System;
  const from = (address: string) => ({ 'x-forwarded-for': address });
  const url = (i: number) => String(system.apis[i % system.apis.length]?.url);

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: {
        // The api trusts the test as its proxy, so X-Forwarded-For gives each request the address of our choice.
        TRUST_PROXY: 'loopback',
        RATE_LIMIT_WINDOW_MS: '60000',
        RATE_LIMIT_INITIALIZE_PER_ADDRESS: '6',
        MAX_SESSIONS_PER_ADDRESS: '3',
        MAX_STREAMS_PER_SESSION: '2',
      },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('T-RSRC-1, T-SEC-3: live sessions per address are capped (MAX_SESSIONS_PER_ADDRESS) and initialize per address rate-limited; other addresses are not affected', async () => {
    const hostile = from('198.51.100.7');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { sessionId, error } = await initialize(url(i), hostile);
      expect(error, `initialize ${i + 1}`).to.equal(undefined);
      ids.push(String(sessionId));
    }
    const capped = await initialize(url(0), hostile);
    expect(capped.error?.code).to.equal(-32029);
    expect(capped.error?.message).to.match(
      /^Too many sessions: this address already holds 3 live sessions \(MAX_SESSIONS_PER_ADDRESS\)/,
    );
    expect(capped.error?.data).to.deep.equal({ limit: 'sessions_per_address', max: 3 });
    expect((await initialize(url(1), from('198.51.100.8'))).error, 'another address').to.equal(undefined);
    // DELETE frees the slot on every replica at once.
    expect((await deleteSession(url(1), ids[0] as string)).status).to.equal(204);
    expect(await system.redis.zscore(`${system.prefix}:address-sessions:198.51.100.7`, ids[0] as string)).to.equal(
      null,
    );
    expect((await initialize(url(0), hostile)).error).to.equal(undefined);
    // Every attempt counts against the rate, the refused ones too: the 6th is the last one of this window.
    expect((await initialize(url(1), hostile)).error?.data).to.deep.include({ limit: 'sessions_per_address' });
    const limited = await initialize(url(0), hostile);
    expect(limited.error?.code).to.equal(-32029);
    expect(limited.error?.message).to.match(
      /^Rate limit exceeded: more than 6 initialize requests from this address in 60000 ms \(RATE_LIMIT_INITIALIZE_PER_ADDRESS\); retry after \d+ ms$/,
    );
    expect((await initialize(url(1), from('198.51.100.8'))).error, 'another address').to.equal(undefined);
  });

  it('T-SEC-3: a megabyte initialize stores a session of about a kilobyte: the used capabilities, clientInfo cut', async () => {
    const capabilities = {
      elicitation: { form: {}, padding: 'x'.repeat(300_000) },
      sampling: {},
      roots: { listChanged: true },
      experimental: { blob: 'y'.repeat(300_000) },
      tasks: {
        list: {},
        cancel: {},
        requests: { elicitation: { create: {} }, tools: { call: { padding: 'z'.repeat(100_000) } } },
      },
    };
    const clientInfo = {
      name: 'n'.repeat(50_000),
      version: '1',
      title: 't'.repeat(50_000),
      icons: ['i'.repeat(50_000)],
    };
    const { sessionId, error } = await initialize(
      url(0),
      from('198.51.100.20'),
      initializeBody(capabilities, clientInfo),
    );
    expect(error).to.equal(undefined);
    const key = `${system.prefix}:session:${String(sessionId)}`;
    const stored = await system.redis.hgetall(key);
    expect(JSON.parse(String(stored['clientCapabilities']))).to.deep.equal({
      elicitation: { form: {} },
      sampling: {},
      // Kept since tools can ask for the roots (ctx.listRoots()).
      roots: { listChanged: {} },
      tasks: { cancel: {}, requests: { elicitation: { create: {} } } },
    });
    expect(JSON.parse(String(stored['clientInfo']))).to.deep.equal({
      name: 'n'.repeat(128),
      version: '1',
      title: 't'.repeat(128),
    });
    expect(Number(await system.redis.call('MEMORY', 'USAGE', key))).to.be.below(2048);
    // The session works, on the other replica too.
    expect(await clientOf(url(1), String(sessionId), {}).call('ping')).to.deep.equal({});
  });

  it('T-RSRC-1: blocking JSON-mode tasks/result and plain tools/call count against MAX_STREAMS_PER_SESSION with SSE streams', async () => {
    const opened = await initialize(url(0), from('198.51.100.30'));
    const client = clientOf(url(0), String(opened.sessionId), from('198.51.100.30'));
    const other = clientOf(url(1), String(opened.sessionId), from('198.51.100.30'));
    const json = { headers: { accept: 'application/json' } };
    const done = await client.createTask('wait', { seconds: 0 });
    await client.call('tasks/result', { taskId: done['taskId'] }, json);
    const slow = await client.createTask('wait', { seconds: 3 });
    const waits = [
      client.rpc('tasks/result', { taskId: slow['taskId'] }, json),
      other.rpc('tasks/result', { taskId: slow['taskId'] }, json),
    ];
    const slots = `${system.prefix}:session:${String(opened.sessionId)}:streams`;
    await eventually(async () => ((await system.redis.zcard(slots)) === 2 ? true : undefined));
    const third = await client.rpc('tasks/result', { taskId: slow['taskId'] }, json);
    expect(third.error?.code).to.equal(-32029);
    expect(third.error?.message).to.match(
      /^Too many open streams: this session already has 2 SSE streams or waiting requests open \(MAX_STREAMS_PER_SESSION\)/,
    );
    expect(third.error?.data).to.deep.equal({ limit: 'streams_per_session', max: 2 });
    // A plain call without SSE is refused before anything is queued.
    const tasksBefore = await system.redis.zcard(`${system.prefix}:all-tasks`);
    const plain = await other.rpc('tools/call', { name: 'wait', arguments: { seconds: 0 } }, json);
    expect(plain.error?.data).to.deep.equal({ limit: 'streams_per_session', max: 2 });
    expect(await system.redis.zcard(`${system.prefix}:all-tasks`)).to.equal(tasksBefore);
    // One budget: the GET stream is refused too. A task that has ended is answered at once: it does not wait.
    const get = await rawRequest(url(1), {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': String(opened.sessionId), ...from('198.51.100.30') },
    });
    expect(get.status).to.equal(429);
    expect((await client.call('tasks/result', { taskId: done['taskId'] }, json))['content']).to.deep.equal([
      { type: 'text', text: 'Waited 0s' },
    ]);
    // The waits end with the task and give their slots back.
    for (const reply of await Promise.all(waits)) {
      expect(reply.result?.['content']).to.deep.equal([{ type: 'text', text: 'Waited 3s' }]);
    }
    expect(await system.redis.zcard(slots)).to.equal(0);
    expect(await other.call('tools/call', { name: 'wait', arguments: { seconds: 0 } }, json)).to.deep.equal({
      content: [{ type: 'text', text: 'Waited 0s' }],
    });
  });
});
