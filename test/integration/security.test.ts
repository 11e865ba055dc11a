// Security end to end through real apis and workers (in the test's process; processes where a test signals one or
// where the client would share their event loop): bearer authentication (API keys, HS256 JWTs), tasks bound to
// principals, limits, rate limits shared by replicas, the audit trail, and the unauthenticated mode.
import { createHash, randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { eventually, McpTestClient, RpcError, sleep, type RpcReply } from '../support/mcp-client.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { startSystem, type System } from '../support/in-process.ts';
import {
  repoRoot,
  spawnService,
  startSystem as startProcesses,
  type System as ProcessSystem,
} from '../support/processes.ts';
import { modernPost, WITH_TASKS } from '../support/modern-client.ts';
import { rawRequest } from '../support/raw-http.ts';
import { track } from '../support/resources.ts';
import { SseConnection } from '../support/sse-client.ts';

const ALICE_KEY = `alice-${randomUUID()}`;
const BOB_KEY = `bob-${randomUUID()}`;
const CAROL_KEY = `carol-${randomUUID()}`;
const JWT_SECRET = `jwt-secret-${randomUUID()}-${randomUUID()}`;
const CLIENT_CAPABILITIES = { elicitation: { form: {} } };

async function connectAs(url: string, token: string, capabilities: Record<string, unknown> = {}) {
  const client = new McpTestClient(url);
  client.headers = { authorization: `Bearer ${token}` };
  await client.initialize('2025-11-25', capabilities);
  return client;
}

async function rpcError(promise: Promise<unknown>): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(RpcError);
    return error as RpcError;
  }
  throw new Error('expected a JSON-RPC error');
}

function rawPost(
  url: string,
  headers: Record<string, string>,
  body: unknown = { jsonrpc: '2.0', id: 1, method: 'ping' },
) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'security', version: '1' } },
};

function sessionHeaders(client: McpTestClient, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': String(client.sessionId),
    'mcp-protocol-version': '2025-11-25',
    ...client.headers,
    ...extra,
  };
}

function hs256(claims: Record<string, unknown>, options: { secret?: string; expiresIn?: string } = {}) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setIssuer('https://issuer.test')
    .setAudience('mcp-task-runner')
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(new TextEncoder().encode(options.secret ?? JWT_SECRET));
}

/** Retries a request whose connection dropped (a keep-alive socket closed under load); JSON-RPC errors are answers. */
async function withRetry<T>(send: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof TypeError) || attempt >= attempts) throw error;
    }
  }
}

const auditRecords = (system: System) =>
  [...system.apis, ...system.workers].flatMap((child) => child.records()).filter((record) => record['audit'] === true);

describe('security with bearer tokens (2 api replicas, 1 worker, API keys + HS256 JWTs)', function () {
  this.timeout(60_000);
  let system: System;
  let alice: McpTestClient;
  let bob: McpTestClient;

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: {
        AUTH_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY},carol:${CAROL_KEY}`,
        AUTH_JWT_SECRET: JWT_SECRET,
        AUTH_JWT_ISSUER: 'https://issuer.test',
        AUTH_JWT_AUDIENCE: 'mcp-task-runner',
        MAX_TASKS_PER_OWNER: '3',
        MAX_ARGUMENTS_BYTES: '1024',
        MAX_STREAMS_PER_SESSION: '2',
        RATE_LIMIT_FAILED_LOOKUPS: '1000',
        AUTH_JWT_MAX_LIFETIME_MS: '3600000',
        RESULT_RECHECK_MS: '1000',
        INPUT_RECHECK_MS: '1000',
      },
    });
    alice = await connectAs(system.apiUrl, ALICE_KEY, CLIENT_CAPABILITIES);
    bob = await connectAs(String(system.apis[1]?.url), BOB_KEY, CLIENT_CAPABILITIES);
  });
  after(async () => {
    await system?.stop();
  });

  describe('authentication', () => {
    it('T-SEC-1: a request without a token gets 401, a Bearer challenge and a JSON-RPC error body', async () => {
      for (const method of ['POST', 'GET', 'DELETE']) {
        const response = await fetch(system.apiUrl, {
          method,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) } : {}),
        });
        expect(response.status, method).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.equal('Bearer realm="mcp-task-runner"');
        const body = (await response.json()) as RpcReply;
        expect(body).to.deep.include({ jsonrpc: '2.0', id: null });
        expect(body.error?.code).to.equal(-32600);
        expect(body.error?.message).to.match(/^Unauthorized: .*bearer token/);
      }
    });

    it('T-SEC-1: a wrong key, a forged, expired or foreign-audience JWT get 401 with error="invalid_token"', async () => {
      const bad = [
        'not-a-key-of-ours-at-all',
        await hs256({ sub: 'mallory' }, { secret: `wrong-${JWT_SECRET}` }),
        await hs256({ sub: 'alice' }, { expiresIn: '-1m' }),
        await new SignJWT({ sub: 'alice' })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer('https://issuer.test')
          .setAudience('someone-else')
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(JWT_SECRET)),
      ];
      for (const token of bad) {
        const response = await rawPost(system.apiUrl, { authorization: `Bearer ${token}` });
        expect(response.status).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.match(
          /^Bearer realm="mcp-task-runner", error="invalid_token"/,
        );
        expect(((await response.json()) as RpcReply).error?.code).to.equal(-32600);
      }
    });

    it('T-SEC-1: an HS256 JWT signed with AUTH_JWT_SECRET is accepted; its issuer and sub are the principal', async () => {
      const dave = await connectAs(system.apiUrl, await hs256({ sub: 'dave' }));
      const task = await dave.createTask('wait', { seconds: 0 });
      const owner = await system.redis.hget(`${system.prefix}:task:${String(task['taskId'])}`, 'owner');
      expect(owner).to.equal('principal:jwt:https://issuer.test|dave');
      // The same subject from a new token and session is the same principal.
      const daveAgain = await connectAs(system.apiUrl, await hs256({ sub: 'dave' }));
      expect((await daveAgain.call('tasks/get', { taskId: task['taskId'] }))['taskId']).to.equal(task['taskId']);
    });

    it('T-SEC-1: a JWT whose sub is the name of an API-key principal is another principal (namespaced by source)', async () => {
      const aliceByJwt = await connectAs(system.apiUrl, await hs256({ sub: 'alice' }));
      const byKey = await alice.createTask('wait', { seconds: 0 });
      const byJwt = await aliceByJwt.createTask('wait', { seconds: 0 });
      const ownerOf = (task: Record<string, unknown>) =>
        system.redis.hget(`${system.prefix}:task:${String(task['taskId'])}`, 'owner');
      expect(await ownerOf(byKey)).to.equal('principal:key:alice');
      expect(await ownerOf(byJwt)).to.equal('principal:jwt:https://issuer.test|alice');
      expect(await rpcError(aliceByJwt.call('tasks/get', { taskId: byKey['taskId'] }))).to.include({ code: -32602 });
      expect(await rpcError(alice.call('tasks/get', { taskId: byJwt['taskId'] }))).to.include({ code: -32602 });
      // Nor can the JWT use the API-key principal's session.
      const foreign = await rawPost(system.apiUrl, {
        authorization: aliceByJwt.headers['authorization'] as string,
        'mcp-session-id': String(alice.sessionId),
      });
      expect(foreign.status).to.equal(404);
    });

    it('T-SEC-1: a JWT without exp, or living longer than AUTH_JWT_MAX_LIFETIME_MS, gets 401 invalid_token', async () => {
      const secret = new TextEncoder().encode(JWT_SECRET);
      const claims = { sub: 'dave', iss: 'https://issuer.test', aud: 'mcp-task-runner' };
      const now = Math.floor(Date.now() / 1000);
      const refused = [
        // No exp: valid for ever, were it accepted.
        [await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().sign(secret), /"exp" claim/],
        // Issued now for 2 h, and without iat for 2 h from now: the limit is 1 h.
        [await hs256({ sub: 'dave' }, { expiresIn: '2h' }), /lives longer than the 3600 s/],
        [
          await new SignJWT(claims)
            .setProtectedHeader({ alg: 'HS256' })
            .setExpirationTime(now + 7200)
            .sign(secret),
          /lives longer/,
        ],
        // iat in the past does not make a far exp acceptable.
        [
          await new SignJWT(claims)
            .setProtectedHeader({ alg: 'HS256' })
            .setIssuedAt(now - 1800)
            .setExpirationTime(now + 3000)
            .sign(secret),
          /lives longer/,
        ],
      ] as const;
      for (const [token, reason] of refused) {
        const response = await rawPost(system.apiUrl, { authorization: `Bearer ${token}` });
        expect(response.status).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.match(/error="invalid_token", error_description="/);
        expect(((await response.json()) as RpcReply).error?.message).to.match(reason);
      }
      // Within the limit: issued 30 min ago, 20 min to go.
      const fine = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt(now - 1800)
        .setExpirationTime(now + 1200)
        .sign(secret);
      expect((await rawPost(system.apiUrl, { authorization: `Bearer ${fine}` }, INITIALIZE)).status).to.equal(200);
    });
  });

  describe('binding to the principal', () => {
    it('T-SEC-1: a session used with another principal token is answered like an unknown session (404)', async () => {
      const foreign = await rawPost(system.apiUrl, {
        authorization: `Bearer ${BOB_KEY}`,
        'mcp-session-id': String(alice.sessionId),
      });
      const unknown = await rawPost(system.apiUrl, {
        authorization: `Bearer ${BOB_KEY}`,
        'mcp-session-id': randomUUID(),
      });
      expect(foreign.status).to.equal(404);
      expect(await foreign.text()).to.equal(await unknown.text());
      const deleted = await fetch(system.apiUrl, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${BOB_KEY}`, 'mcp-session-id': String(alice.sessionId) },
      });
      expect(deleted.status).to.equal(404);
      expect(await alice.call('ping')).to.deep.equal({});
    });

    it('T-SEC-1, T-ERR-1: get, result and cancel of another principal task answer exactly like an unknown id', async () => {
      const task = await alice.createTask('wait', { seconds: 3 });
      const taskId = task['taskId'];
      for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
        const foreign = await bob.rpc(method, { taskId }, { id: 7 });
        const unknown = await bob.rpc(method, { taskId: randomUUID() }, { id: 7 });
        expect(foreign, method).to.deep.equal(unknown);
        expect(foreign.error).to.deep.equal({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      }
      const still = await alice.call('tasks/get', { taskId });
      expect(still['status']).to.equal('working');
      await alice.call('tasks/cancel', { taskId });
    });

    it('T-SEC-1: a foreign id costs the same time as an unknown one (same work on both paths)', async () => {
      const task = await alice.createTask('wait', { seconds: 0 });
      await eventually(async () =>
        (await alice.call('tasks/get', { taskId: task['taskId'] }))['status'] === 'completed' ? true : undefined,
      );
      const timings: Record<'foreign' | 'unknown', number[]> = { foreign: [], unknown: [] };
      for (let i = 0; i < 40; i++) {
        for (const kind of ['foreign', 'unknown'] as const) {
          const started = process.hrtime.bigint();
          await bob.rpc('tasks/get', { taskId: kind === 'foreign' ? task['taskId'] : randomUUID() });
          timings[kind].push(Number(process.hrtime.bigint() - started) / 1e6);
        }
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
      // Loose bound: the machine may be busy; a record read and sent back on one path would show as much more.
      const gap = Math.abs(median(timings.foreign) - median(timings.unknown));
      expect(gap).to.be.below(Math.max(5, 0.5 * median(timings.unknown)));
    });

    it('T-SEC-1: tasks/list returns only the caller tasks, from any of the principal sessions', async () => {
      const mine = await alice.createTask('wait', { seconds: 0 });
      const theirs = await bob.createTask('wait', { seconds: 0 });
      const ids = async (client: McpTestClient) => {
        const found: unknown[] = [];
        let cursor: unknown;
        do {
          const page = await client.call('tasks/list', cursor ? { cursor } : {});
          found.push(...(page['tasks'] as { taskId: unknown }[]).map((task) => task.taskId));
          cursor = page['nextCursor'];
        } while (cursor);
        return found;
      };
      const aliceAgain = await connectAs(String(system.apis[1]?.url), ALICE_KEY);
      expect(await ids(alice))
        .to.include(mine['taskId'])
        .and.not.include(theirs['taskId']);
      expect(await ids(aliceAgain))
        .to.include(mine['taskId'])
        .and.not.include(theirs['taskId']);
      expect(await ids(bob))
        .to.include(theirs['taskId'])
        .and.not.include(mine['taskId']);
    });

    it('T-SEC-1, T-INPUT-1: another principal cannot answer a task elicitation; the owner can', async () => {
      const task = await alice.createTask('ask_user', { question: 'Who are you?' });
      const stream = await SseConnection.open(alice.url, {
        method: 'POST',
        headers: sessionHeaders(alice),
        body: JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'tasks/result', params: { taskId: task['taskId'] } }),
      });
      const request = await stream.next((event) => event.message['method'] === 'elicitation/create');
      const answer = {
        jsonrpc: '2.0',
        id: request.message['id'],
        result: { action: 'accept', content: { answer: 'bob' } },
      };
      const hijack = await bob.post(answer);
      expect(hijack.status).to.equal(400);
      expect((await alice.call('tasks/get', { taskId: task['taskId'] }))['status']).to.equal('input_required');
      expect(
        (await alice.post({ ...answer, result: { action: 'accept', content: { answer: 'alice' } } })).status,
      ).to.equal(202);
      const final = await stream.next((event) => event.message['id'] === 42);
      expect(final.message['result']).to.deep.include({ content: [{ type: 'text', text: 'alice' }] });
      await stream.finished();
    });
  });

  describe('limits', () => {
    it('T-RSRC-1: at most MAX_TASKS_PER_OWNER unfinished tasks per principal (-32029); a finished one frees its slot', async () => {
      const carol = await connectAs(system.apiUrl, CAROL_KEY);
      const tasks = [];
      for (let i = 0; i < 3; i++) tasks.push(await carol.createTask('wait', { seconds: 30 }));
      const refused = await rpcError(carol.createTask('wait', { seconds: 30 }));
      expect(refused.code).to.equal(-32029);
      expect(refused.message).to.match(/Too many unfinished tasks: at most 3 .*MAX_TASKS_PER_OWNER/);
      expect(refused.data).to.deep.include({ limit: 'tasks_per_owner', max: 3 });
      // Another session of carol is the same requestor; another principal is not limited by carol's tasks.
      const carolAgain = await connectAs(String(system.apis[1]?.url), CAROL_KEY);
      expect((await rpcError(carolAgain.createTask('wait', { seconds: 0 }))).code).to.equal(-32029);
      await carol.call('tasks/cancel', { taskId: tasks[0]?.['taskId'] });
      const next = await carolAgain.createTask('wait', { seconds: 30 });
      expect(next['status']).to.equal('working');
      for (const task of [...tasks.slice(1), next]) await carol.call('tasks/cancel', { taskId: task['taskId'] });
    });

    it('T-RSRC-1: arguments larger than MAX_ARGUMENTS_BYTES are refused with -32029 before anything is queued', async () => {
      const refused = await rpcError(alice.createTask('crash', { message: 'x'.repeat(2000) }));
      expect(refused.code).to.equal(-32029);
      expect(refused.message).to.match(/^-32029: Arguments too large: \d+ bytes .* at most 1024 .*MAX_ARGUMENTS_BYTES/);
    });

    it('T-RSRC-1: at most MAX_STREAMS_PER_SESSION SSE streams per session, across replicas', async () => {
      const client = await connectAs(system.apiUrl, ALICE_KEY);
      const open = (url: string) =>
        SseConnection.open(url, { method: 'GET', headers: sessionHeaders(client, { accept: 'text/event-stream' }) });
      const first = await open(String(system.apis[0]?.url));
      const second = await open(String(system.apis[1]?.url));
      const third = await fetch(system.apiUrl, {
        method: 'GET',
        headers: sessionHeaders(client, { accept: 'text/event-stream' }),
      });
      expect(third.status).to.equal(429);
      const body = (await third.json()) as RpcReply;
      expect(body.error?.code).to.equal(-32029);
      expect(body.error?.message).to.match(/Too many open streams: .* 2 SSE streams .*MAX_STREAMS_PER_SESSION/);
      // An SSE answer stream counts too: tasks/result of a running task is refused with a JSON-RPC error.
      const task = await client.createTask('wait', { seconds: 5 });
      const refused = await client.rpc('tasks/result', { taskId: task['taskId'] });
      expect(refused.error?.code).to.equal(-32029);
      // So does a plain call that would stream: refused, its work stopped, and nothing of it left in Redis.
      const call = await client.rpc('tools/call', { name: 'wait', arguments: { seconds: 5 } });
      expect(call.error?.code).to.equal(-32029);
      expect(await system.redis.exists(`${system.prefix}:session:${String(client.sessionId)}:calls`)).to.equal(0);
      await first.close();
      await eventually(async () => {
        const again = await fetch(system.apiUrl, {
          method: 'GET',
          headers: sessionHeaders(client, { accept: 'text/event-stream' }),
          signal: AbortSignal.timeout(500),
        }).catch(() => undefined);
        if (again?.status !== 200) return undefined;
        await again.body?.cancel();
        return true;
      });
      await second.close();
      await client.call('tasks/cancel', { taskId: task['taskId'] });
    });
  });

  describe('audit trail', () => {
    it('T-AUDIT-1: creation, completion, result retrieval and rejected access are audited, with no secret or argument', async () => {
      const marker = `private-argument-${randomUUID()}`;
      const created = await alice.call(
        'tools/call',
        { name: 'wait', arguments: { seconds: 0 }, task: {} },
        { id: 'audit-create' },
      );
      // A plain call carrying a private argument through api, Redis and worker.
      expect((await alice.call('tools/call', { name: 'echo', arguments: { text: marker } }))['content']).to.deep.equal([
        { type: 'text', text: marker },
      ]);
      const taskId = String((created['task'] as Record<string, unknown>)['taskId']);
      await alice.call('tasks/result', { taskId }, { id: 'audit-result', headers: { accept: 'application/json' } });
      await bob.rpc('tasks/get', { taskId });
      await rawPost(system.apiUrl, { authorization: `Bearer ${BOB_KEY}x` });
      const records = await eventually(() => {
        const all = auditRecords(system);
        return all.some((r) => r['taskId'] === taskId && /^task\.(completed|failed)$/.test(String(r['event'])))
          ? all
          : undefined;
      });
      const about = records.filter((record) => record['taskId'] === taskId);
      expect(about.find((r) => r['event'] === 'task.created')).to.deep.include({
        principal: 'principal:key:alice',
        requestId: 'audit-create',
        sessionId: alice.sessionId,
      });
      expect(about.find((r) => r['event'] === 'task.result_retrieved')).to.deep.include({
        principal: 'principal:key:alice',
        requestId: 'audit-result',
      });
      expect(about.find((r) => /^task\.(completed|failed)$/.test(String(r['event'])))).to.include({
        principal: 'principal:key:alice',
      });
      expect(about.find((r) => r['event'] === 'access.rejected')).to.deep.include({
        principal: 'principal:key:bob',
        reason: 'task_not_found',
        method: 'tasks/get',
      });
      expect(records.some((r) => r['event'] === 'access.rejected' && r['reason'] === 'invalid_token')).to.equal(true);
      for (const record of about.filter((r) => String(r['event']).startsWith('task.'))) {
        expect(record['tool']).to.equal('wait');
      }
      // Nothing secret anywhere in any process's log: keys, the JWT secret, arguments.
      const everything = [...system.apis, ...system.workers].flatMap((child) => child.logs).join('\n');
      for (const secret of [ALICE_KEY, BOB_KEY, CAROL_KEY, JWT_SECRET, marker]) {
        expect(everything.includes(secret), 'a secret or an argument reached the log').to.equal(false);
      }
    });
  });
});

describe('JWTs verified against a JWKS (an issuer served on 127.0.0.1)', function () {
  this.timeout(60_000);
  let system: System;
  let rs384System: System;
  let issuer: Server;
  let signingKey: CryptoKey;
  let strangerKey: CryptoKey;
  let rs384Key: CryptoKey;
  let jwksFetches = 0;

  const es256 = (key: CryptoKey, kid: string, claims: Record<string, unknown> = { sub: 'erin' }, alg = 'ES256') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg, kid })
      .setIssuedAt()
      .setIssuer('https://issuer.test')
      .setAudience('mcp-task-runner')
      .setExpirationTime('5m')
      .sign(key);

  before(async () => {
    const pair = await generateKeyPair('ES256');
    signingKey = pair.privateKey;
    strangerKey = (await generateKeyPair('ES256')).privateKey;
    // A key of the issuer for an algorithm outside the default allowlist.
    const rs384 = await generateKeyPair('RS384');
    rs384Key = rs384.privateKey;
    const jwks = JSON.stringify({
      keys: [
        { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' },
        { ...(await exportJWK(rs384.publicKey)), kid: 'k2', alg: 'RS384', use: 'sig' },
      ],
    });
    issuer = createServer((req, res) => {
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      jwksFetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    });
    await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
    const { port } = issuer.address() as AddressInfo;
    const env = {
      AUTH_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`,
      AUTH_JWT_ISSUER: 'https://issuer.test',
      AUTH_JWT_AUDIENCE: 'mcp-task-runner',
    };
    [system, rs384System] = await Promise.all([
      // One worker, so that its tools are in the catalog the api lists and validates from.
      startSystem({ workers: 1, env }),
      startSystem({ workers: 0, env: { ...env, AUTH_JWT_ALGORITHMS: 'RS384' } }),
    ]);
  });
  after(async () => {
    await Promise.all([system?.stop(), rs384System?.stop()]);
    await new Promise((resolve) => issuer?.close(resolve));
  });

  it("T-SEC-1: a JWT signed by a key of the issuer's JWKS is accepted; its sub is the principal", async () => {
    const erin = await connectAs(system.apiUrl, await es256(signingKey, 'k1'));
    expect(await erin.call('ping', {})).to.deep.equal({});
    // The same principal from a new session and a new token sees the session's owner as its own.
    const again = await connectAs(system.apiUrl, await es256(signingKey, 'k1'));
    expect(await again.call('tasks/list', {})).to.deep.equal({ tasks: [] });
    expect(jwksFetches).to.be.at.least(1);
    const task = await erin.createTask('wait', { seconds: 0 });
    const owner = await system.redis.hget(`${system.prefix}:task:${String(task['taskId'])}`, 'owner');
    expect(owner).to.equal('principal:jwt:https://issuer.test|erin');
  });

  it('T-SEC-1: algorithms are pinned: a token signed by a JWKS key under an algorithm not in AUTH_JWT_ALGORITHMS is 401', async () => {
    // The default allowlist has no RS384, although the issuer's JWKS has an RS384 key.
    const rs384Token = await es256(rs384Key, 'k2', { sub: 'erin' }, 'RS384');
    const refused = await rawPost(system.apiUrl, { authorization: `Bearer ${rs384Token}` });
    expect(refused.status).to.equal(401);
    expect(((await refused.json()) as RpcReply).error?.message).to.match(/the signing algorithm is not accepted/);
    // An api that lists RS384 takes it, and then refuses ES256.
    expect((await rawPost(rs384System.apiUrl, { authorization: `Bearer ${rs384Token}` }, INITIALIZE)).status).to.equal(
      200,
    );
    const es256Token = await es256(signingKey, 'k1');
    expect((await rawPost(rs384System.apiUrl, { authorization: `Bearer ${es256Token}` })).status).to.equal(401);
    const started = rs384System.apis[0]?.records().find((r) => String(r['message']).startsWith('authentication on'));
    expect(started?.['methods']).to.deep.equal([
      `JWT (JWKS ${String(rs384System.env['AUTH_JWKS_URL'])}; RS384), lifetime at most 86400 s`,
    ]);
  });

  it('T-SEC-1: a JWKS-signed token without exp is refused', async () => {
    const noExp = await new SignJWT({ sub: 'erin' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuedAt()
      .setIssuer('https://issuer.test')
      .setAudience('mcp-task-runner')
      .sign(signingKey);
    const response = await rawPost(system.apiUrl, { authorization: `Bearer ${noExp}` });
    expect(response.status).to.equal(401);
    expect(((await response.json()) as RpcReply).error?.message).to.match(/"exp" claim/);
  });

  it('T-SEC-1: a JWT signed by another key, with an unknown kid, or unsigned gets 401 with error="invalid_token"', async () => {
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ sub: 'erin', iss: 'https://issuer.test', aud: 'mcp-task-runner' }),
    ).toString('base64url')}.`;
    const bad = [await es256(strangerKey, 'k1'), await es256(signingKey, 'k9'), unsigned];
    for (const token of bad) {
      const response = await rawPost(system.apiUrl, { authorization: `Bearer ${token}` });
      expect(response.status).to.equal(401);
      expect(response.headers.get('www-authenticate')).to.match(
        /^Bearer realm="mcp-task-runner", error="invalid_token"/,
      );
    }
  });
});

describe('API keys from AUTH_API_KEYS_FILE, reloaded on SIGHUP', function () {
  this.timeout(60_000);
  let system: ProcessSystem;
  let dir: string;
  let file: string;
  const FRANK_KEY = `frank-${randomUUID()}`;
  const GRACE_KEY = `grace-${randomUUID()}`;
  const line = (principal: string, key: string) => `${principal} ${createHash('sha256').update(key).digest('hex')}\n`;
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'keys', version: '1' } },
  };
  const status = async (key: string) =>
    (await rawPost(system.apiUrl, { authorization: `Bearer ${key}` }, initialize)).status;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcpt-keys-'));
    file = join(dir, 'api-keys');
    writeFileSync(file, `# principal sha256(key)\n${line('frank', FRANK_KEY)}`);
    system = await startProcesses({ workers: 0, env: { AUTH_API_KEYS_FILE: file } });
  });
  after(async () => {
    await system?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('T-SEC-1: a key added to the file works and a key removed is refused after SIGHUP, without a restart', async () => {
    const api = system.apis[0] as ProcessSystem['apis'][number];
    expect(await status(FRANK_KEY)).to.equal(200);
    expect(await status(GRACE_KEY)).to.equal(401);
    writeFileSync(file, line('grace', GRACE_KEY));
    api.process.kill('SIGHUP');
    await eventually(async () => ((await status(FRANK_KEY)) === 401 ? true : undefined));
    expect(await status(GRACE_KEY)).to.equal(200);
    const reloaded = api.records().find((record) => record['event'] === 'auth.keys_reloaded');
    expect(reloaded).to.deep.include({ audit: true, keys: 1, file });
  });

  it('T-SEC-1: a broken file on SIGHUP keeps the keys in force and says why; an emptied file refuses everyone', async () => {
    const api = system.apis[0] as ProcessSystem['apis'][number];
    writeFileSync(file, 'grace not-a-digest\n');
    api.process.kill('SIGHUP');
    await eventually(() =>
      api.records().find((record) => record['message'] === 'API keys not reloaded; the previous keys stay in force'),
    );
    expect(await status(GRACE_KEY)).to.equal(200);
    writeFileSync(file, '');
    api.process.kill('SIGHUP');
    await eventually(async () => ((await status(GRACE_KEY)) === 401 ? true : undefined));
    expect(await status('')).to.equal(401);
  });
});

describe('rate limits and enumeration (API keys, short failed-lookup budget)', function () {
  this.timeout(60_000);
  // Processes of their own: 2000 lookups, 50 at a time, would share one event loop with the client here, and a
  // loaded machine stretched that past the test's minute.
  let system: ProcessSystem;

  before(async () => {
    system = await startProcesses({
      env: {
        AUTH_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY},carol:${CAROL_KEY}`,
        RATE_LIMIT_WINDOW_MS: '60000',
        RATE_LIMIT_FAILED_LOOKUPS: '20',
        RATE_LIMIT_FAILED_LOOKUPS_PER_ADDRESS: '1000',
        RATE_LIMIT_PER_PRINCIPAL: '200',
        RATE_LIMIT_PER_ADDRESS: '100000',
      },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('T-SEC-3, T-ID-2: guessing thousands of task ids finds nothing and is throttled; the victim is unaffected', async () => {
    const alice = await connectAs(system.apiUrl, ALICE_KEY);
    const bob = await connectAs(system.apiUrl, BOB_KEY);
    const secret = await alice.createTask('wait', { seconds: 0 });
    // 2000 random ids (uuid v4, as ours are), 50 at a time, from 127.0.0.1 only.
    const codes = new Map<number, number>();
    const messages = new Set<string>();
    let found = 0;
    const guesses = 2000;
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < guesses) {
          next++;
          const reply = await withRetry(() => bob.rpc('tasks/get', { taskId: randomUUID() }));
          if (reply.result) found++;
          const code = reply.error?.code ?? 0;
          codes.set(code, (codes.get(code) ?? 0) + 1);
          if (code === -32029) messages.add(String(reply.error?.message).replace(/\d+ ms$/, 'N ms'));
        }
      }),
    );
    expect(found).to.equal(0);
    // Fixed 60 s windows of 20 failed lookups: the run touched at most ceil(elapsed / 60 s) + 1 windows. A lookup is
    // checked against the budget before it fails and is counted, so in each window up to 50 lookups (all those in
    // flight) can pass the check before the first failures land: a loaded machine that spreads the run over two
    // windows sees two such overshoots.
    const windows = Math.ceil((Date.now() - started) / 60_000) + 1;
    const allowed = windows * (20 + 50);
    expect(codes.get(-32602) ?? 0).to.be.at.most(allowed);
    expect(codes.get(-32029) ?? 0).to.be.at.least(guesses - allowed);
    expect([...messages].join('\n')).to.match(
      /lookups of unknown task ids by this requestor .*RATE_LIMIT_FAILED_LOOKUPS/,
    );
    const throttled = await rpcError(bob.call('tasks/get', { taskId: secret['taskId'] }));
    expect(throttled.code).to.equal(-32029);
    expect(throttled.data).to.include.keys('retryAfterMs', 'limit', 'max', 'windowMs');
    // The same address, another principal: alice still reads her task (the per-address budget is larger).
    expect((await alice.call('tasks/get', { taskId: secret['taskId'] }))['taskId']).to.equal(secret['taskId']);
  });

  it('T-SEC-3, T-AUDIT-1: counters of failed lookups and throttled requests are in Redis and on /metrics', async () => {
    const counters = await system.redis.hgetall(`${system.prefix}:security-counters`);
    expect(Number(counters['failed_lookups'])).to.be.at.least(20);
    expect(Number(counters['throttled_lookups'])).to.be.greaterThan(0);
    const metrics = await (await fetch(system.apiUrl.replace(/\/mcp$/, '/metrics'))).text();
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith('mcpt_security_events_total{') && l.includes('event="failed_lookups"'));
    expect(Number(line?.split(' ').pop())).to.be.at.least(20);
  });

  it('T-SEC-3, T-AUDIT-1: resuming a stream with a Last-Event-ID that names a task is a lookup: charged, throttled, audited', async () => {
    const carol = await connectAs(system.apiUrl, CAROL_KEY);
    const before = Number((await system.redis.hget(`${system.prefix}:security-counters`, 'failed_lookups')) ?? 0);
    const resume = (taskId: string) => {
      // The id an answer stream gives its events: "t.<base64url [taskId, requestId, kind]>.<stream id>".
      const origin = Buffer.from(JSON.stringify([taskId, 7, 'task'])).toString('base64url');
      return fetch(carol.url, {
        method: 'GET',
        headers: {
          accept: 'text/event-stream',
          authorization: `Bearer ${CAROL_KEY}`,
          'mcp-session-id': carol.sessionId ?? '',
          'mcp-protocol-version': '2025-11-25',
          'last-event-id': `t.${origin}.0-0`,
        },
      });
    };
    const statuses: number[] = [];
    let notFound = 0;
    // 20 failed lookups per 60 s window: a few windows' worth at most before one is refused.
    for (let i = 0; i < 45 && !statuses.includes(429); i++) {
      const response = await resume(randomUUID());
      statuses.push(response.status);
      const text = await response.text();
      if (response.status === 200 && text.includes('"code":-32602')) notFound++;
      if (response.status === 429) expect(text).to.match(/RATE_LIMIT_FAILED_LOOKUPS/);
    }
    expect(statuses).to.include(429);
    expect(notFound).to.be.at.least(1);
    const after = Number((await system.redis.hget(`${system.prefix}:security-counters`, 'failed_lookups')) ?? 0);
    expect(after - before).to.be.at.least(notFound);
    await eventually(() => {
      const audited = auditRecords(system).filter(
        (record) => record['reason'] === 'task_not_found' && record['principal'] === 'principal:key:carol',
      );
      return audited.length >= notFound ? audited : undefined;
    });
  });

  it('T-SEC-3: task operations per principal are capped (RATE_LIMIT_PER_PRINCIPAL) with -32029', async () => {
    const alice = await connectAs(system.apiUrl, ALICE_KEY);
    let refused: RpcReply | undefined;
    // At most two windows' worth (the fixed window may end during the loop).
    for (let i = 0; i < 2 * 200 + 10 && !refused; i++) {
      const reply = await alice.rpc('tasks/list', {});
      if (reply.error) refused = reply;
    }
    expect(refused?.error?.code).to.equal(-32029);
    expect(refused?.error?.message).to.match(
      /task operations by this requestor .*RATE_LIMIT_PER_PRINCIPAL.*retry after \d+ ms/,
    );
  });
});

describe('without authentication (session binding, tasks/list off, per-address limit across 2 replicas)', function () {
  this.timeout(60_000);
  let system: System;

  before(async () => {
    system = await startSystem({
      apis: 2,
      env: { TASKS_LIST_ENABLED: 'false', RATE_LIMIT_PER_ADDRESS: '60', RATE_LIMIT_WINDOW_MS: '60000' },
    });
  });
  after(async () => {
    await system?.stop();
  });

  it('T-SEC-2: the api warns loudly at start-up that authentication is off', () => {
    const warning = system.apis[0]?.records().find((r) => String(r['message']).includes('AUTHENTICATION IS OFF'));
    expect(warning?.['level']).to.equal('warn');
  });

  it('T-SEC-2: with TASKS_LIST_ENABLED=false, tasks.list is not declared and tasks/list is -32601 like any unknown method', async () => {
    const client = new McpTestClient(system.apiUrl);
    const result = await client.initialize('2025-11-25');
    const tasks = (result['capabilities'] as Record<string, Record<string, unknown>>)['tasks'];
    expect(tasks).to.not.have.property('list');
    expect(tasks).to.have.property('cancel');
    const list = await client.rpc('tasks/list', {}, { id: 3 });
    expect(list.error).to.deep.equal({ code: -32601, message: "Method not found: 'tasks/list'" });
  });

  it('T-SEC-2, T-ID-2: without auth a task is bound to its session; another session gets the unknown-id answer', async () => {
    const a = await McpTestClient.connect(system.apiUrl);
    const b = await McpTestClient.connect(String(system.apis[1]?.url));
    const task = await a.createTask('wait', { seconds: 0 });
    expect(String(task['taskId'])).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const foreign = await b.rpc('tasks/get', { taskId: task['taskId'] }, { id: 1 });
    const unknown = await b.rpc('tasks/get', { taskId: randomUUID() }, { id: 1 });
    expect(foreign).to.deep.equal(unknown);
  });

  it('T-SEC-2, T-AUDIT-1: audit and log lines carry a digest of the session id, never the id (the only credential)', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const sessionId = String(client.sessionId);
    const task = await client.createTask('wait', { seconds: 0 });
    await client.call('tasks/result', { taskId: task['taskId'] }, { headers: { accept: 'application/json' } });
    // The documented recipe: printf %s "$SESSION_ID" | sha256sum | cut -c1-16
    const digest = `sha256:${createHash('sha256').update(sessionId).digest('hex').slice(0, 16)}`;
    const about = await eventually(() => {
      const records = auditRecords(system).filter((r) => r['taskId'] === task['taskId']);
      return records.some((r) => r['event'] === 'task.completed') ? records : undefined;
    });
    expect(about.find((r) => r['event'] === 'task.created')).to.deep.include({
      principal: `session:${digest}`,
      sessionId: digest,
    });
    expect(about.find((r) => r['event'] === 'task.result_retrieved')).to.deep.include({ sessionId: digest });
    expect(about.find((r) => r['event'] === 'task.completed')).to.deep.include({ principal: `session:${digest}` });
    const worker = (system.workers[0] as System['workers'][number]).records();
    expect(worker.some((r) => r['taskId'] === task['taskId'] && r['owner'] === `session:${digest}`)).to.equal(true);
    const everything = [...system.apis, ...system.workers].flatMap((child) => child.logs).join('\n');
    expect(everything.includes(sessionId), 'a session id reached a log line').to.equal(false);
  });

  it('T-SEC-3: requests naming made-up sessions count against no limit and leave no rate keys behind', async () => {
    const before = await system.redis.keys(`${system.prefix}:rate:*`);
    for (let i = 0; i < 20; i++) {
      const stranger = new McpTestClient(system.apiUrl);
      stranger.sessionId = randomUUID();
      const reply = await stranger.post({
        jsonrpc: '2.0',
        id: i,
        method: 'tasks/get',
        params: { taskId: randomUUID() },
      });
      expect(reply.status).to.equal(404);
    }
    expect(await system.redis.keys(`${system.prefix}:rate:*`)).to.have.members(before);
  });

  it('edges: on a loopback bind, /metrics, /readyz and /healthz of the api and of a worker answer only a loopback Host (a DNS-rebinding page reads nothing); /METRICS and /metrics/ are not /metrics', async () => {
    const port = await freePort();
    const worker = await system.addWorker({ WORKER_METRICS_PORT: String(port) });
    const api = `http://127.0.0.1:${new URL(system.apiUrl).port}`;
    const targets = [
      { base: api, paths: ['/metrics', '/readyz', '/healthz'] },
      { base: `http://127.0.0.1:${port}`, paths: ['/metrics', '/healthz'] },
    ];
    try {
      for (const { base, paths } of targets) {
        const { port: bound } = new URL(base);
        for (const path of paths) {
          const get = (host: string) => rawRequest(`${base}${path}`, { method: 'GET', headers: { host } });
          // The rebinding page's own name, now resolving to 127.0.0.1: refused before anything is read.
          const rebound = await get(`rebind.example.com:${bound}`);
          expect(rebound.status, `${base}${path}`).to.equal(403);
          expect(rebound.text).to.match(
            /^Forbidden: Host 'rebind\.example\.com:\d+' is not allowed on a loopback bind/,
          );
          expect(rebound.text).not.to.match(/mcpt_|ready/);
          for (const host of [`localhost:${bound}`, `127.0.0.1:${bound}`, `[::1]:${bound}`]) {
            expect((await get(host)).status, `${host}${path}`).to.equal(200);
          }
        }
      }
      for (const path of ['/METRICS', '/metrics/', '/Metrics']) {
        const spelled = await rawRequest(`${api}${path}`, { method: 'GET', headers: { host: '127.0.0.1' } });
        expect(spelled.status, path).to.equal(404);
        expect(spelled.text).not.to.match(/mcpt_/);
      }
    } finally {
      await worker.stop();
    }
  });

  it('edges: on 2026-07-28 an Idempotency-Key refusal names no task id: another client of the same address cannot learn (and then read) the task filed under it', async () => {
    const key = `shared-${randomUUID()}`;
    const call = (seconds: number) =>
      modernPost(
        system.apiUrl,
        'tools/call',
        { name: 'wait', arguments: { seconds } },
        { capabilities: WITH_TASKS, headers: { 'idempotency-key': key } },
      );
    const first = await call(0.1);
    const taskId = first.body.result?.['taskId'];
    expect(taskId, JSON.stringify(first.body)).to.be.a('string');
    const refused = await call(0.2);
    expect(refused.body.error?.code).to.equal(-32602);
    expect(refused.body.error?.message).to.equal(
      `Idempotency-Key '${key}' was used for another call: a retry must repeat the same tool and arguments, and a new call needs a new key`,
    );
    expect(JSON.stringify(refused.body)).not.to.include(String(taskId));
  });

  it('T-SEC-3: the per-address limit is shared by every session and every replica', async () => {
    const clients = [
      await McpTestClient.connect(system.apiUrl),
      await McpTestClient.connect(String(system.apis[1]?.url)),
    ];
    let refused: RpcReply | undefined;
    for (let i = 0; i < 80 && !refused; i++) {
      const reply = await (clients[i % 2] as McpTestClient).rpc('tasks/get', { taskId: randomUUID() });
      if (reply.error?.code === -32029) refused = reply;
    }
    expect(refused?.error?.message).to.match(/task operations from this address .*RATE_LIMIT_PER_ADDRESS/);
    await sleep(0);
  });
});

describe('secrets stay out of start-up errors (real api and worker processes)', function () {
  this.timeout(60_000);

  /** The output of a process that must refuse to start. */
  async function refusedStart(app: 'api' | 'worker', env: Record<string, string>): Promise<string> {
    try {
      await spawnService(app, `apps/${app}/src/main.ts`, env, /^this never appears$/);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`${app} started with a bad configuration`);
  }

  it('a rejected secret is named with the rule it breaks, never echoed; a Redis password is masked', async () => {
    const secrets = {
      ADMIN_TOKEN: `adm-${randomUUID().slice(0, 8)}`,
      AUTH_JWT_SECRET: `jwt-${randomUUID()}`.slice(0, 30),
      CALLBACK_SECRET: `cb-${randomUUID()}`.slice(0, 30),
    };
    const password = `pw-${randomUUID()}`;
    const redis = { REDIS_URL: `redis://app:${password}@127.0.0.1:99999` };
    const api = await refusedStart('api', { ...secrets, ...redis });
    const worker = await refusedStart('worker', { CALLBACK_SECRET: secrets.CALLBACK_SECRET, ...redis });
    for (const output of [api, worker]) {
      expect(output).to.match(/exited with 1 before it was ready/);
      expect(output).to.contain('REDIS_URL="redis://app:***@127.0.0.1:99999": ');
      expect(output).to.match(/CALLBACK_SECRET \(value hidden, 30 characters\): use at least 32 characters/);
      for (const secret of [...Object.values(secrets), password]) expect(output).to.not.contain(secret);
    }
    expect(api).to.match(/ADMIN_TOKEN \(value hidden, 12 characters\): use at least 16 characters/);
    expect(api).to.match(/AUTH_JWT_SECRET \(value hidden, 30 characters\): an HS256 secret needs at least 32/);
  });

  it('edges: JWT authentication without AUTH_JWT_AUDIENCE refuses to start, saying why and what to set', async () => {
    const secret = `jwt-${randomUUID()}-${randomUUID()}`;
    const output = await refusedStart('api', { AUTH_JWT_SECRET: secret });
    expect(output).to.match(
      /AUTH_JWT_AUDIENCE \(unset\): JWT authentication needs the audience of this server.*MCP authorization requires audience validation.*AUTH_JWT_AUDIENCE_OPTIONAL=1/,
    );
    expect(output).not.to.contain(secret);
  });
});

describe('Origin and /metrics on a non-loopback bind (HOST=0.0.0.0, without authentication)', function () {
  this.timeout(60_000);
  const METRICS_TOKEN = `metrics-${randomUUID()}`;
  let open: System;
  let listed: System;
  const INITIALIZE = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'origin', version: '1' } },
  });
  const post = (system: System, headers: Record<string, string>) =>
    rawRequest(system.apiUrl, {
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: INITIALIZE,
    });

  before(async () => {
    [open, listed] = await Promise.all([
      startSystem({ workers: 0, env: { HOST: '0.0.0.0' } }),
      startSystem({
        workers: 0,
        env: {
          HOST: '0.0.0.0',
          ALLOWED_ORIGINS: 'https://App.Example.com:8443/, http://localhost:5173',
          METRICS_TOKEN,
        },
      }),
    ]);
  });
  after(async () => {
    await Promise.all([open?.stop(), listed?.stop()]);
  });

  it('C26-SEC-1: without ALLOWED_ORIGINS every request with an Origin is 403, a rebinding page (Host = Origin) too', async () => {
    const port = new URL(open.apiUrl).port;
    const cases: Record<string, string>[] = [
      { origin: 'http://evil.example.com' },
      // DNS rebinding: the attacker's name now resolves to us, so Host and Origin agree.
      { origin: `http://rebind.example.com:${port}`, host: `rebind.example.com:${port}` },
      { origin: `http://localhost:${port}` },
      { origin: 'null' },
    ];
    for (const headers of cases) {
      const reply = await post(open, headers);
      expect(reply.status, JSON.stringify(headers)).to.equal(403);
      expect((reply.json as RpcReply).error?.message).to.match(
        /^Forbidden: Origin '.*' is not allowed \(ALLOWED_ORIGINS/,
      );
    }
    // Clients that are not browsers send no Origin: served as before, under any Host name.
    expect((await post(open, { host: `mcp.example.com:${port}` })).status).to.equal(200);
    const warning = open.apis[0]?.records().find((r) => String(r['message']).includes('ALLOWED_ORIGINS'));
    expect(warning?.['level']).to.equal('warn');
  });

  it('/metrics is open without a token only on a loopback bind: on 0.0.0.0 it answers 403 saying what to set (api and worker); /admin needs ADMIN_TOKEN on any bind', async () => {
    const base = `http://127.0.0.1:${new URL(open.apiUrl).port}`;
    const port = await freePort();
    const worker = await open.addWorker({ WORKER_METRICS_HOST: '0.0.0.0', WORKER_METRICS_PORT: String(port) });
    const cases = [
      { process: open.apis[0], url: `${base}/metrics`, variable: 'HOST' },
      { process: worker, url: `http://127.0.0.1:${port}/metrics`, variable: 'WORKER_METRICS_HOST' },
    ];
    for (const { process, url, variable } of cases) {
      const refused = await fetch(url);
      expect(refused.status, url).to.equal(403);
      const text = await refused.text();
      expect(text).to.match(new RegExp(`^Forbidden: ${variable}=0\\.0\\.0\\.0 is not a loopback address`));
      expect(text).to.include('Set METRICS_TOKEN').and.not.match(/mcpt_/);
      expect((await fetch(url.replace(/\/metrics$/, '/healthz'))).status, url).to.equal(200);
      // Said at start-up too, so the refusal is no surprise.
      const warning = process?.records().find((r) => String(r['message']).includes('METRICS_TOKEN is unset'));
      expect(warning?.['level'], variable).to.equal('warn');
    }
    expect((await fetch(`${base}/admin/api/tasks`)).status).to.equal(404);
    // With METRICS_TOKEN the same bind serves the token's bearer (and only it: test/integration/metrics.test.ts).
    const token = `http://127.0.0.1:${new URL(listed.apiUrl).port}/metrics`;
    expect((await fetch(token)).status).to.equal(401);
    expect((await fetch(token, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).to.equal(200);
  });

  it('C26-SEC-1: with ALLOWED_ORIGINS exactly the listed origins pass (written in any case, with or without a slash)', async () => {
    for (const origin of ['https://app.example.com:8443', 'http://localhost:5173']) {
      expect((await post(listed, { origin })).status, origin).to.equal(200);
    }
    for (const origin of ['https://app.example.com', 'http://app.example.com:8443', 'http://localhost:5174']) {
      expect((await post(listed, { origin })).status, origin).to.equal(403);
    }
  });
});

describe('deploy/nginx.conf in front of a real api (nginx of the Debian package)', function () {
  this.timeout(60_000);
  const NGINX = '/usr/sbin/nginx';
  const METRICS_TOKEN = `metrics-${randomUUID()}`;
  let system: ProcessSystem;
  let nginx: ChildProcess | undefined;
  let releaseNginx: (() => Promise<void>) | undefined;
  let base: string;
  let dir: string;

  before(async function () {
    if (!existsSync(NGINX) && !process.env['CI']) {
      console.log(`    (skipped: ${NGINX} is missing; apt-get install nginx, as .ci/run does)`);
      this.skip();
    }
    // As in docker-compose.yml: the api binds every address behind the balancer; the token opens its /metrics.
    system = await startProcesses({ workers: 0, env: { HOST: '0.0.0.0', METRICS_TOKEN } });
    const port = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'mcpt-nginx-'));
    chmodSync(dir, 0o777);
    // The file as deployed, but for what only Docker has: its DNS resolver and the service name of the replicas.
    const site = readFileSync(join(repoRoot, 'deploy', 'nginx.conf'), 'utf8')
      .replace(/^resolver .*$/m, '')
      .replace(/server api:\d+ resolve;/, `server 127.0.0.1:${new URL(system.apiUrl).port};`)
      .replace(/listen 80;/, `listen 127.0.0.1:${port};`);
    expect(site).to.include(`listen 127.0.0.1:${port};`);
    writeFileSync(join(dir, 'site.conf'), site);
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
      (name) => `${name}_temp_path ${dir}/${name};`,
    );
    writeFileSync(
      join(dir, 'nginx.conf'),
      `events {}\nhttp {\n  access_log off;\n  ${temp.join('\n  ')}\n  include ${dir}/site.conf;\n}\n`,
    );
    nginx = spawn(
      NGINX,
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;`],
      { stdio: 'ignore' },
    );
    releaseNginx = track('nginx', () => stopNginx());
    base = `http://127.0.0.1:${port}`;
    await eventually(() =>
      fetch(`${base}/healthz`).then(
        (reply) => (reply.ok ? true : undefined),
        () => undefined,
      ),
    );
  });

  async function stopNginx(): Promise<void> {
    const child = nginx;
    nginx = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGQUIT');
    await exited;
  }

  after(async () => {
    await releaseNginx?.();
    await system?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('edges: /metrics is not served on the public side however it is spelled (/METRICS, /metrics/, /Metrics/x, %6detrics, //metrics), even with METRICS_TOKEN; the rest is proxied', async () => {
    const authorization = `Bearer ${METRICS_TOKEN}`;
    // The replica itself serves the token's bearer: what the balancer must keep inside.
    const direct = `http://127.0.0.1:${new URL(system.apiUrl).port}/metrics`;
    expect((await fetch(direct, { headers: { authorization } })).status).to.equal(200);
    for (const path of ['/metrics', '/METRICS', '/metrics/', '/Metrics/x', '/%6detrics', '//metrics', '/metrics?x=1']) {
      const reply = await rawRequest(`${base}${path}`, {
        method: 'GET',
        headers: { host: 'mcp.example.com', authorization },
      });
      expect(reply.status, path).to.equal(404);
      // nginx's own page: the request never reached a replica (whose routes refuse these spellings too).
      expect(reply.text, path).to.match(/<center>nginx[/<]/);
    }
    expect((await fetch(`${base}/healthz`)).status).to.equal(200);
    expect((await rawPost(`${base}/mcp`, {}, INITIALIZE)).status).to.equal(200);
  });
});
