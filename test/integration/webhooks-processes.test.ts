// Webhooks with real processes (issue 40, docs/webhooks.md): a receiver that verifies signatures with the
// `standardwebhooks` package gets exactly one terminal delivery per task (after deduping by webhook-id, the same id
// on every attempt) across a receiver outage longer than several backoff steps and a kill -9 of the worker that was
// delivering; operators see every attempt (the dashboard's task JSON, /metrics). And a call naming a webhook it may
// not have gets -32602 saying why, on both wires.
import { expect } from 'chai';
import { KeySpace, TaskKeys } from '@mcp-tasks/engine';
import { RunnerMeta } from '@mcp-tasks/protocol';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { modernPost, MODERN, WITH_TASKS } from '../support/modern-client.ts';
import { spawnApi, startSystem, type ApiHandle, type System } from '../support/processes.ts';
import { scrape } from '../support/prometheus.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { webhookHandler } from '../../examples/webhook-receiver/receiver.mjs';

const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const KEY = 'alice-key-0123456789abcdef';
const BOB_KEY = 'bob-key-0123456789abcdef';
const BOB_SECRET = `whsec_${Buffer.alloc(32, 6).toString('base64')}`;
const ADMIN = 'admin-token-0123456789abcdef';
const TASKS = 4;
/**
 * The outage, shortened from issue 40's 30 s with its ratio kept: many times the longest backoff step (400 ms),
 * about as many attempts per delivery as a 30 s outage gets with WEBHOOK_BACKOFF_MAX_MS=2 s.
 */
const OUTAGE_MS = 8000;

describe('webhooks with real processes: at least once, deduped to exactly one, across an outage and a kill -9', function () {
  this.timeout(120_000);
  let system: System;
  let receiver: WebhookReceiver;
  let bobs: WebhookReceiver;
  let anonymous: ApiHandle;
  /** What the receiver of docs/webhooks.md (examples/webhook-receiver) took: once per webhook-id. */
  const taken: { task: Record<string, unknown>; id: string }[] = [];

  before(async () => {
    receiver = await startWebhookReceiver(
      SECRET,
      webhookHandler(SECRET, (task, id) => taken.push({ task, id })),
    );
    bobs = await startWebhookReceiver(BOB_SECRET);
    system = await startSystem({
      env: {
        AUTH_API_KEYS: `alice:${KEY},bob:${BOB_KEY}`,
        // Operators' webhooks: alice's tasks go to her receiver unless a call names another; bob's to his, signed
        // with his own secret.
        WEBHOOKS_BY_PRINCIPAL: JSON.stringify({
          'principal:key:alice': { url: `${receiver.url}/configured` },
          'principal:key:bob': { url: `${bobs.url}/bob`, events: 'all', secret: BOB_SECRET },
        }),
        ADMIN_TOKEN: ADMIN,
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_ALLOWED_TARGETS: '127.0.0.1',
        WEBHOOK_BACKOFF_MS: '100',
        WEBHOOK_BACKOFF_MAX_MS: '400',
        // A lease of 2 x 1 s + 2 s: what a killed worker's claims wait before another worker sends them again.
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_POLL_MS: '100',
        HANDLE_AFTER_MS: '500',
      },
    });
    // The same system without authentication: its calls have no principal.
    anonymous = await spawnApi({ ...system.env, AUTH_API_KEYS: '' });
  });
  after(async () => {
    await anonymous?.stop();
    await system?.stop();
    await receiver?.close();
    await bobs?.close();
  });

  /** A 2025-11-25 session that negotiated Tasks (`capabilities` {}: one that did not, which gets task handles). */
  async function client(
    api = system.apiUrl,
    key: string | undefined = KEY,
    capabilities: Record<string, unknown> = { tasks: {} },
  ): Promise<McpTestClient> {
    const mcp = new McpTestClient(api);
    if (key) mcp.headers = { authorization: `Bearer ${key}` };
    await mcp.initialize(undefined, capabilities);
    return mcp;
  }

  /** A call of `wait` naming `webhook`: as a task unless `task` is null. */
  const callWith = (webhook: unknown, task: Record<string, unknown> | null = {}) => ({
    name: 'wait',
    arguments: { seconds: 0.2 },
    ...(task ? { task } : {}),
    _meta: { [RunnerMeta.Webhook]: webhook },
  });

  it('a webhook to a private, loopback or link-local address is refused with -32602 saying so, on both wires', async () => {
    const mcp = await client();
    await expectRpcError(
      mcp.call('tools/call', callWith('http://10.1.2.3/hook')),
      -32602,
      /10\.1\.2\.3 is a private address/,
    );
    await expectRpcError(
      mcp.call('tools/call', callWith({ url: 'http://169.254.169.254/latest', events: 'all' })),
      -32602,
      /is a link-local address; webhooks reach public addresses only unless WEBHOOK_ALLOWED_TARGETS/,
    );
    await expectRpcError(
      mcp.call('tools/call', callWith('http://[::1]:8080/hook')),
      -32602,
      /::1 is a loopback address/,
    );
    await expectRpcError(mcp.call('tools/call', callWith('ftp://example.com/x')), -32602, /must be http/);
    // 2026-07-28, with the tasks extension.
    const modern = await modernPost(system.apiUrl, 'tools/call', callWith('http://192.168.0.10/hook', null), {
      bearer: KEY,
      meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
        'io.modelcontextprotocol/clientInfo': { name: 'webhooks-test', version: '1' },
        [RunnerMeta.Webhook]: 'http://192.168.0.10/hook',
      },
    });
    expect(modern.body.error?.code).to.equal(-32602);
    expect(modern.body.error?.message).to.match(/192\.168\.0\.10 is a private address/);
    await mcp.terminate();
  });

  it('a webhook is refused without an authenticated principal, and on a call that does not run as a task', async () => {
    const unauthenticated = await client(anonymous.url, undefined);
    await expectRpcError(
      unauthenticated.call('tools/call', callWith(`${receiver.url}/anonymous`)),
      -32602,
      /accepted only from an authenticated principal/,
    );
    await unauthenticated.terminate();
    // A plain call of a client that negotiated Tasks, and a tool that forbids tasks (even for a client with handles).
    const mcp = await client();
    await expectRpcError(
      mcp.call('tools/call', callWith(`${receiver.url}/plain`, null)),
      -32602,
      /delivered for tasks, and this call does not run as one/,
    );
    await mcp.terminate();
    const handles = await client(system.apiUrl, KEY, {});
    await expectRpcError(
      handles.call('tools/call', {
        name: 'echo',
        arguments: { text: 'hi' },
        _meta: { [RunnerMeta.Webhook]: `${receiver.url}/plain` },
      }),
      -32602,
      /delivered for tasks, and this call does not run as one/,
    );
    await handles.terminate();
    expect(receiver.requests.filter((r) => r.path === '/anonymous' || r.path === '/plain')).to.have.length(0);
  });

  it('a client without Tasks (task handles, docs/clients.md): a call handed out as a task delivers its end; one answered on its request delivers nothing', async () => {
    const mcp = await client(system.apiUrl, KEY, {});
    // Still running at HANDLE_AFTER_MS (500 ms here): answered with its handle, and a task from then on.
    const handed = await mcp.call('tools/call', {
      name: 'wait',
      arguments: { seconds: 1.5 },
      _meta: { [RunnerMeta.Webhook]: `${receiver.url}/handed` },
    });
    const taskId = (handed['structuredContent'] as { taskId: string }).taskId;
    expect(taskId).to.be.a('string');
    const delivery = await eventually(() => taken.find(({ task }) => task['taskId'] === taskId), 15_000);
    expect(delivery.task).to.deep.include({ status: 'completed' });
    // Ended before its deadline: its result is the answer, and nothing is posted.
    const quick = await mcp.call('tools/call', {
      name: 'wait',
      arguments: { seconds: 0 },
      _meta: { [RunnerMeta.Webhook]: `${receiver.url}/quick` },
    });
    expect(quick['content']).to.deep.equal([{ type: 'text', text: 'Waited 0s' }]);
    const due = new TaskKeys(new KeySpace(system.prefix)).webhooksDue();
    expect(await system.redis.zcard(due)).to.equal(0);
    expect(receiver.requests.filter((r) => r.path === '/quick')).to.have.length(0);
    expect(receiver.requests.filter((r) => r.path === '/handed').map((r) => r.id)).to.deep.equal([delivery.id]);
    await mcp.terminate();
  });

  it('an operator configures webhooks per principal (WEBHOOKS_BY_PRINCIPAL), each signed with the principal’s secret or the deployment’s', async () => {
    const alice = await client();
    const bob = await client(system.apiUrl, BOB_KEY);
    const call = { name: 'wait', arguments: { seconds: 0 }, task: {} };
    const aliceTask = ((await alice.call('tools/call', call))['task'] as { taskId: string }).taskId;
    const bobTask = ((await bob.call('tools/call', call))['task'] as { taskId: string }).taskId;
    // Alice's receiver is the example receiver (it verifies with the deployment's secret).
    const toAlice = await eventually(() => taken.find(({ task }) => task['taskId'] === aliceTask));
    expect(toAlice.task['status']).to.equal('completed');
    expect(receiver.requests.find((r) => r.id === toAlice.id)?.path).to.equal('/configured');
    const toBob = await eventually(() =>
      bobs.delivered().find((r) => r.path === '/bob' && r.body?.['taskId'] === bobTask),
    );
    // Verified with bob's secret by his receiver, not with the deployment's.
    expect(toBob.verified).to.equal(true);
    expect(toBob.body?.['status']).to.equal('completed');
    await alice.terminate();
    await bob.terminate();
  });

  it('exactly one terminal delivery per task, the same webhook-id on every attempt, across an outage and a kill -9 of the delivering worker', async () => {
    const mcp = await client();
    const base = system.apiUrl.replace(/\/mcp$/, '');
    const deliveredBefore = (await scrape(`${base}/metrics`)).value('mcpt_webhook_deliveries_total', {
      outcome: 'delivered',
    });
    receiver.mode = 'fail';
    const taskIds: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const result = await mcp.call('tools/call', callWith(`${receiver.url}/outage`));
      taskIds.push((result['task'] as { taskId: string }).taskId);
    }
    const outageStart = Date.now();
    const attemptsOf = (taskId: string) => receiver.requests.filter((r) => r.id.startsWith(`${taskId}_`));
    // The receiver answers 503 while it is down for maintenance: every task's delivery is tried more than once.
    await eventually(() => (taskIds.every((id) => attemptsOf(id).length >= 2) ? true : undefined), 20_000);
    // Then it accepts connections and never answers: the worker's attempts are under way when it is killed.
    receiver.mode = 'hang';
    await eventually(() => (receiver.held() > 0 ? true : undefined), 10_000);
    const [first] = system.workers;
    first?.process.kill('SIGKILL');
    await first?.stop();
    const killedAt = Date.now();
    // Then it is down (connections reset) for the rest of the outage, while another worker takes over.
    receiver.mode = 'down';
    await system.addWorker();
    // The new worker meets the outage too, whatever its start took.
    const ready = Date.now();
    await eventually(
      () => (receiver.requests.some((r) => r.answer === 'reset' && r.at > ready) ? true : undefined),
      20_000,
    );
    const left = OUTAGE_MS - (Date.now() - outageStart);
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    receiver.mode = 'ok';
    const due = new TaskKeys(new KeySpace(system.prefix)).webhooksDue();
    const pending = () => system.redis.zcard(due);
    const ours = () => taken.filter(({ task }) => taskIds.includes(String(task['taskId'])));
    await eventually(async () => (ours().length >= TASKS && (await pending()) === 0 ? true : undefined), 30_000);

    // Exactly one per task after deduping by webhook-id, whatever came twice.
    expect(
      ours()
        .map(({ task }) => task['taskId'])
        .sort(),
    ).to.deep.equal([...taskIds].sort());
    for (const taskId of taskIds) {
      const task = (await mcp.call('tasks/get', { taskId })) as { status: string; lastUpdatedAt: string };
      const id = `${taskId}_${Date.parse(task.lastUpdatedAt)}`;
      const attempts = attemptsOf(taskId);
      // One delivery per task: every attempt carried the id of its terminal change.
      expect(new Set(attempts.map((r) => r.id)), taskId).to.deep.equal(new Set([id]));
      expect(attempts.length).to.be.at.least(3);
      const [delivery] = ours().filter((entry) => entry.id === id);
      expect(delivery?.task).to.deep.include({ taskId, status: 'completed' });
      expect(delivery?.task['result']).to.deep.include({ content: [{ type: 'text', text: 'Waited 0.2s' }] });
    }
    // Every request was signed as the standard says (those reset before they were read are not checked).
    expect(receiver.requests.filter((r) => r.answer !== 'reset' && !r.verified)).to.have.length(0);
    // The attempts under way when the worker died were sent again, with their ids, by the other worker.
    const held = receiver.requests.filter((r) => r.answer === 'held' && r.at <= killedAt).map((r) => r.id);
    expect(held.length).to.be.greaterThan(0);
    for (const id of held) {
      expect(
        receiver.requests.some((r) => r.id === id && r.at > killedAt && r.answer === 204),
        id,
      ).to.equal(true);
    }

    // Operators see every attempt: the dashboard's task JSON (as mcpt inspect) and /metrics.
    const headers = { authorization: `Bearer ${ADMIN}` };
    const inspection = (await (await fetch(`${base}/admin/api/tasks/${taskIds[0]}`, { headers })).json()) as {
      webhook: { url: string; pending: unknown[]; attempts: { outcome: string; worker: string; error?: string }[] };
    };
    expect(inspection.webhook.url).to.equal(`${receiver.url}/outage`);
    expect(inspection.webhook.pending).to.deep.equal([]);
    const outcomes = inspection.webhook.attempts.map((a) => a.outcome);
    expect(outcomes.at(-1)).to.equal('delivered');
    expect(outcomes.filter((o) => o === 'failed').length).to.be.at.least(2);
    expect(new Set(inspection.webhook.attempts.map((a) => a.worker)).size).to.equal(2);
    const metrics = await scrape(`${base}/metrics`, headers);
    expect(metrics.value('mcpt_webhook_deliveries_total', { outcome: 'delivered' }) - deliveredBefore).to.equal(TASKS);
    expect(metrics.value('mcpt_webhook_deliveries_total', { outcome: 'failed' })).to.be.at.least(TASKS * 2);
    expect(metrics.value('mcpt_webhook_pending_tasks')).to.equal(0);
    await mcp.terminate();
  });
});
