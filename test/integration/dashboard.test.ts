// The admin dashboard in a real headless browser (Debian's chromium driven by playwright-core), against real api
// and worker (in the test's process): it loads behind ADMIN_TOKEN, lists a task just created and shows its status change; plus
// the auth rules, the pages' files and headers, and the JSON endpoints behind the page. Browser traffic targets
// 127.0.0.1 only.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type Engine } from '@mcp-tasks/engine';
import { TaskKind } from '@mcp-tasks/protocol';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, removeScreenshots, shoot, skipWithoutChromium } from '../support/browser.ts';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const TOKEN = 'test-admin-token-0123456789abcdef';
describe('admin dashboard (ADMIN_TOKEN; headless chromium; api and worker in process)', function () {
  this.timeout(60_000);
  let system: System;
  let base: string;
  let engine: Engine;

  before(async function () {
    skipWithoutChromium(this);
    system = await startSystem({
      env: {
        ADMIN_TOKEN: TOKEN,
        WORKER_SHUTDOWN_GRACE_MS: '500',
        // The demo tools, and tools that keep steps and call children (docs/durable-execution.md).
        MCPT_DEMO: '1',
        MCPT_TOOLS: './test/fixtures/durable/tools.ts,./examples/fan-out/src/tools.ts',
      },
    });
    base = system.apiUrl.replace(/\/mcp$/, '');
    engine = createEngine({ redis: system.redis }, { REDIS_PREFIX: system.prefix, SESSION_IDLE_TTL_MS: 3_600_000 });
  });
  after(async () => {
    await engine?.close();
    await system?.stop();
  });

  describe('access', () => {
    it('asks for credentials without a token or with a wrong one (401, Basic challenge)', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: `Basic ${basic('admin', 'x')}` },
      ];
      for (const headers of attempts) {
        const response = await fetch(`${base}/admin/api/tasks`, { headers });
        expect(response.status).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.match(/^Basic realm="mcp-task-runner admin"/);
      }
      expect((await fetch(`${base}/admin/queues`)).status).to.equal(401);
    });

    it('accepts the token as Bearer or as the Basic password; the JSON lists tasks in MCP terms', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const task = await client.createTask('wait', { seconds: 0 });
      await client.call('tasks/result', { taskId: task['taskId'] });
      const response = await fetch(`${base}/admin/api/tasks?status=completed`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).to.equal(200);
      expect(response.headers.get('cache-control')).to.equal('no-store');
      const page = (await response.json()) as { tasks: Record<string, unknown>[] };
      const listed = page.tasks.find((entry) => entry['taskId'] === task['taskId']);
      expect(listed).to.deep.include({
        status: 'completed',
        tool: 'wait',
        kind: 'task',
        owner: ownerLabelOf(client),
        sessionId: digestOf(String(client.sessionId)),
        createdAt: task['createdAt'],
      });
      expect(listed).to.include.keys('lastUpdatedAt', 'ttl', 'statusMessage', 'expiresAt');
      const detail = await fetch(`${base}/admin/api/tasks/${String(task['taskId'])}`, {
        headers: { authorization: `Basic ${basic('ops', TOKEN)}` },
      });
      const inspection = (await detail.json()) as { history: { status: string }[] };
      // A no-op ends before its worker would note it as running (RUNNING_NOTE_AFTER_MS).
      expect(inspection.history.map((entry) => entry.status)).to.deep.equal(['working', 'completed']);
      const bad = await fetch(`${base}/admin/api/tasks?status=done`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(bad.status).to.equal(400);
    });
  });

  describe("operators' views show no session id (issue 30, finding 7)", () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const json = async (path: string) => {
      const response = await fetch(`${base}${path}`, { headers });
      expect(response.status, path).to.equal(200);
      return { text: await response.clone().text(), body: (await response.json()) as Record<string, unknown> };
    };

    it('T-SEC-2: the task list, a task, its inputs, the overview, the activity and bull-board show the session by its label, and the label finds its tasks', async () => {
      const [client, other] = [await McpTestClient.connect(system.apiUrl), await McpTestClient.connect(system.apiUrl)];
      const done = await client.createTask('wait', { seconds: 0 });
      await client.call('tasks/result', { taskId: done['taskId'] });
      const running = await client.createTask('wait', { seconds: 30 });
      const foreign = await other.createTask('wait', { seconds: 0 });
      await other.call('tasks/result', { taskId: foreign['taskId'] });
      const label = ownerLabelOf(client);
      const secrets = [String(client.sessionId), String(other.sessionId)];
      const views = [
        await json('/admin/api/tasks?limit=500'),
        await json(`/admin/api/tasks/${String(done['taskId'])}`),
        await json(`/admin/api/tasks/${String(running['taskId'])}/inputs`),
        await json('/admin/api/overview'),
      ];
      // The running task's job, as bull-board shows it: its data names the owner by its label too.
      const queue = await eventually(async () => {
        const { body } = await json('/admin/queues/api/queues?activeQueue=&status=latest&page=1&jobsPerPage=10');
        const queues = body['queues'] as { name: string; counts: Record<string, number> }[];
        return queues.find((entry) => entry.name.endsWith('tool-wait') && (entry.counts['active'] ?? 0) > 0);
      });
      const job = await json(`/admin/queues/api/queues/${encodeURIComponent(queue.name)}/${String(running['taskId'])}`);
      expect(JSON.stringify(job.body)).to.contain(`"owner":"${label}"`);
      views.push(job);
      const activity = await eventually(async () => {
        const view = await json('/admin/api/activity');
        const owners = (view.body as unknown as ActivityJson).owners.map((entry) => entry.owner);
        return owners.includes(label) ? view : undefined;
      }, 15_000);
      views.push(activity);
      for (const { text } of views) for (const secret of secrets) expect(text).not.to.contain(secret);
      const detail = views[1]?.body as { task: { owner: string }; record: { owner: string; sessionId: string } };
      expect(detail.task.owner).to.equal(label);
      expect(detail.record).to.deep.include({ owner: label, sessionId: digestOf(String(client.sessionId)) });
      // An operator who has only the label finds that session's tasks, and no other's.
      const { body } = await json(`/admin/api/tasks?owner=${encodeURIComponent(label)}`);
      const ids = (body['tasks'] as { taskId: string }[]).map((task) => task.taskId);
      expect(ids).to.have.members([String(done['taskId']), String(running['taskId'])]);
      await client.call('tasks/cancel', { taskId: running['taskId'] });
    });
  });

  describe('pages and assets', () => {
    const auth = { authorization: `Bearer ${TOKEN}` };

    it('are files behind the token, never cached, under a policy that allows no inline code or other origin', async () => {
      const paths = ['/admin/', '/admin/tasks/some-task', '/admin/assets/dashboard.js', '/admin/assets/task.css'];
      for (const path of [...paths, '/admin/assets/charts.js', '/admin/assets/uplot.js', '/admin/assets/uplot.css']) {
        expect((await fetch(`${base}${path}`)).status, path).to.equal(401);
        const response = await fetch(`${base}${path}`, { headers: auth });
        expect(response.status, path).to.equal(200);
        expect(response.headers.get('cache-control'), path).to.equal('no-store');
        expect(response.headers.get('content-security-policy'), path).to.match(/^default-src 'self';/);
        expect(response.headers.get('x-content-type-options'), path).to.equal('nosniff');
      }
      expect((await fetch(`${base}/admin/assets/nothing.js`, { headers: auth })).status).to.equal(404);
    });

    it('moves /admin to /admin/ (the pages use relative URLs) and serves no task page under a trailing slash', async () => {
      const moved = await fetch(`${base}/admin`, { headers: auth, redirect: 'manual' });
      expect(moved.status).to.equal(302);
      expect(moved.headers.get('location')).to.equal('admin/');
      expect((await fetch(`${base}/admin/tasks/some-task/`, { headers: auth })).status).to.equal(404);
    });

    it('serves one task page whatever the task id in the URL: nothing of the URL reaches the markup', async () => {
      const page = async (taskId: string) => {
        const response = await fetch(`${base}/admin/tasks/${encodeURIComponent(taskId)}`, { headers: auth });
        expect(response.status).to.equal(200);
        return response.text();
      };
      const hostile = await page('</script><script>alert(1)</script>');
      expect(hostile).to.not.include('alert(1)');
      expect(hostile).to.equal(await page('some-task'));
    });
  });

  describe('in a browser', () => {
    let context: BrowserContext;
    let page: Page;
    let release: () => Promise<void>;
    // Policy violations and uncaught errors of the pages' scripts.
    const pageProblems: string[] = [];
    const dialogs: string[] = [];

    before(async () => {
      ({ context, release } = await launchChromium({
        httpCredentials: { username: 'admin', password: TOKEN },
        viewport: { width: 1400, height: 900 },
      }));
      page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) pageProblems.push(message.text());
      });
      page.on('pageerror', (error) => pageProblems.push(error.message));
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
    });
    after(async () => {
      await release?.();
      removeScreenshots();
    });

    it('loads, lists a task created just now and shows its status change; a click opens its page', async () => {
      await page.goto(`${base}/admin`);
      expect(await page.title()).to.equal('mcp-task-runner: tasks');
      const client = await McpTestClient.connect(system.apiUrl);
      const task = await client.createTask('wait', { seconds: 1.5 });
      const row = `tr[data-task-id="${String(task['taskId'])}"]`;
      await page.waitForSelector(`${row} td.status[data-status="working"]`, { timeout: 5000 });
      expect(await page.textContent(`${row} td:nth-child(3)`)).to.equal('wait');
      expect(await page.textContent(`${row} td:nth-child(4)`)).to.equal(ownerLabelOf(client));
      await page.waitForSelector(`${row} td.status[data-status="completed"]`, { timeout: 10_000 });
      expect(await page.textContent(`${row} td:last-child`)).to.equal('The operation completed.');
      await page.waitForSelector('.card[data-name="workers"]');
      expect(await page.textContent('.card[data-name="workers"] b')).to.equal('1');
      // A click opens the task page: record, timeline, job, arguments and result.
      await page.click(row);
      await page.waitForURL(`${base}/admin/tasks/${String(task['taskId'])}`);
      await page.waitForSelector('#status[data-status="completed"]');
      expect(await page.textContent('#task-id')).to.equal(task['taskId']);
      const timeline = await page.locator('#timeline tbody tr').allTextContents();
      expect(timeline[0]).to.include('The task is queued for a worker.');
      expect(timeline.some((line) => /Running on worker-/.test(line))).to.equal(true);
      expect(timeline.at(-1)).to.include('completed');
      expect(await page.textContent('#arguments')).to.include('"seconds": 1.5');
      expect(await page.textContent('#outcome')).to.include('"content"');
      expect(await page.isHidden('#cancel')).to.equal(true);
      expect(await page.isHidden('#retry')).to.equal(true);
      expect(pageProblems).to.deep.equal([]);
    });

    it('a crafted task link runs nothing: the id stays data, and the page says there is no such task', async () => {
      await page.goto(
        `${base}/admin/tasks/${encodeURIComponent('"><img src=x onerror=alert(1)><script>alert(2)</script>')}`,
      );
      await page.waitForSelector('#error:not(:empty)');
      expect(await page.textContent('#error')).to.equal('This task no longer exists (it expired or was purged).');
      expect(await page.$$('img')).to.have.length(0);
      expect(dialogs).to.deep.equal([]);
    });

    it('task page, live: progress, the job (attempts, worker), a pending input request, and an operator cancel (audited)', async () => {
      const client = new McpTestClient(system.apiUrl);
      await client.initialize('2025-11-25', { elicitation: { form: {} } });
      const primes = await client.createTask('count_primes', { below: 1_000_000_000 });
      await page.goto(`${base}/admin/tasks/${String(primes['taskId'])}`);
      await page.waitForSelector('#progress-text', { timeout: 20_000 });
      expect(await page.textContent('#progress-text')).to.match(/\d+ \/ \d+/);
      // The job behind the task: its attempts and the worker running it (a finished job is removed, so only here).
      await page.waitForSelector('#job tr');
      const job = await page.locator('#job tr').allTextContents();
      expect(job).to.include('stateactive (running)');
      expect(job.find((line) => line.startsWith('attempts'))).to.match(/^attempts1 started, 0 made, at most \d+$/);
      expect(job.find((line) => line.startsWith('worker'))).to.match(/^worker.+/);
      // The attempts: the one under way, on its worker, then ended by the cancel.
      await page.waitForSelector('#attempts tbody td[data-ending="running"]');
      await page.click('#cancel');
      await page.waitForSelector('#status[data-status="cancelled"]');
      expect(await page.textContent('#message')).to.equal('Cancelled.');
      expect((await client.call('tasks/get', { taskId: primes['taskId'] }))['status']).to.equal('cancelled');
      await page.waitForSelector('#attempts tbody td[data-ending="cancelled"]');
      const [attempt] = await page.locator('#attempts tbody tr').allTextContents();
      expect(attempt).to.match(/^1worker-\S+-\d+\d{4}-.+Z.+cancelled$/);

      const asking = await client.createTask('ask_user', { question: 'Which colour?' });
      await page.goto(`${base}/admin/tasks/${String(asking['taskId'])}`);
      await page.waitForSelector('#status[data-status="input_required"]', { timeout: 10_000 });
      await page.waitForSelector('#inputs tbody tr[data-request-id]');
      const request = await page.textContent('#inputs tbody tr');
      expect(request).to.include('elicitation/create');
      expect(request).to.include('Which colour?');
      await shoot(page, 'task-page.png');
      await page.click('#cancel');
      await page.waitForSelector('#status[data-status="cancelled"]');
      await page.waitForSelector('#no-inputs:not([hidden])');
      const audited = system.apis[0]?.records().filter((line) => line['event'] === 'operator.task_cancelled') ?? [];
      expect(audited.map((line) => line['taskId'])).to.include.members([primes['taskId'], asking['taskId']]);
      expect(audited[0]).to.include({ audit: true, via: 'dashboard', tool: 'count_primes' });
    });

    it('task page: retry of a failed task creates a new task and says so (audited)', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const failed = await client.createTask('crash', { message: 'boom' });
      await page.goto(`${base}/admin/tasks/${String(failed['taskId'])}`);
      await page.waitForSelector('#status[data-status="failed"]', { timeout: 10_000 });
      expect(await page.textContent('#outcome-title')).to.equal('Error');
      expect(await page.textContent('#outcome')).to.include('boom');
      await page.click('#retry');
      await page.waitForSelector('#retried');
      const retried = String(await page.textContent('#retried'));
      expect(retried).to.not.equal(failed['taskId']);
      const again = await client.call('tasks/get', { taskId: retried });
      expect(again['statusMessage']).to.be.a('string');
      const audited = system.apis[0]?.records().find((line) => line['event'] === 'operator.task_retried');
      expect(audited).to.include({ taskId: failed['taskId'], newTaskId: retried, via: 'dashboard' });
    });

    it("task page: a task's checkpoint, its parent and its child tasks, each linked (docs/durable-execution.md)", async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const parent = await engine.store.get(String((await client.createTask('wait', { seconds: 2 }))['taskId']));
      if (!parent) throw new Error('no parent record');
      // What a running tool's ctx.checkpoint() and ctx.callTool() store, through the same engine calls.
      await engine.store.durable.save(parent, {
        attempt: 1,
        kind: 'checkpoint',
        json: '{"next":5}',
        maxEntries: 10,
        maxTotalBytes: 4096,
      });
      const child = await engine.tasks.create({
        kind: TaskKind.Task,
        owner: parent.owner,
        sessionId: parent.sessionId,
        tool: 'wait',
        arguments: { seconds: 0 },
        retrySafe: true,
        parent: { taskId: parent.taskId, key: 'wait#1', attempt: 1, maxEntries: 10 },
      });
      await page.goto(`${base}/admin/tasks/${parent.taskId}`);
      await page.waitForSelector('#checkpoint');
      expect(await page.textContent('#checkpoint')).to.match(/ago\), 10 bytes$/);
      await page.waitForSelector('#children tbody tr');
      expect(await page.textContent('#children tbody tr td:nth-child(2)')).to.equal('wait');
      await page.click('#children tbody tr a');
      await page.waitForURL(`${base}/admin/tasks/${child.taskId}`);
      await page.waitForSelector('#durable a');
      expect(await page.textContent('#durable a')).to.equal(parent.taskId);
      expect(await page.isHidden('#children')).to.equal(true);
      expect(pageProblems).to.deep.equal([]);
    });

    it('task page: each step and child call in order, and a failed task resumed from its completed steps (the two pages link each other)', async () => {
      const scratch = mkdtempSync(join(tmpdir(), 'mcpt-dashboard-'));
      try {
        const [ledger, gate] = [join(scratch, 'ledger'), join(scratch, 'gate')];
        writeFileSync(gate, 'closed');
        const client = await McpTestClient.connect(system.apiUrl);
        const failed = String((await client.createTask('charge_then_ship', { ledger, gate }))['taskId']);
        await page.goto(`${base}/admin/tasks/${failed}`);
        await page.waitForSelector('#status[data-status="failed"]', { timeout: 10_000 });
        await page.waitForSelector('#steps tbody tr');
        const cells = (i: number) => page.locator('#steps tbody tr').nth(i).locator('td').allTextContents();
        const rows = [await cells(0), await cells(1)];
        expect(rows.map((cells) => cells.slice(0, 3))).to.deep.equal([
          ['1', 'step', 'charge'],
          ['2', 'call count_words', 'count_words#1'],
        ]);
        expect(rows[0]?.[6]).to.equal(String(Buffer.byteLength('{"charged":10}')));
        expect(rows[1]?.[7]).to.match(/^\S+ completed$/);
        expect(await page.isVisible('#resume')).to.equal(true);

        rmSync(gate);
        await page.click('#resume');
        await page.waitForSelector('#retried');
        expect(await page.textContent('#message')).to.match(/^Resumed as task /);
        const resumed = String(await page.textContent('#retried'));
        // Resumed once: the button is gone, and the page names the task that continues it.
        await page.waitForSelector('#resume', { state: 'hidden' });
        await page.waitForSelector('#durable a');
        expect(await page.locator('#durable tr', { hasText: 'resumed by' }).textContent()).to.include(resumed);
        const audited = system.apis[0]
          ?.records()
          .find((line) => line['event'] === 'operator.task_retried' && line['resumed']);
        expect(audited).to.include({ taskId: failed, newTaskId: resumed, via: 'dashboard' });

        await page.click('#retried');
        await page.waitForURL(`${base}/admin/tasks/${resumed}`);
        await page.waitForSelector('#status[data-status="completed"]', { timeout: 10_000 });
        await page.waitForSelector('#steps tbody tr:nth-child(3)');
        const after = await page.locator('#steps tbody tr').allTextContents();
        expect(after[0]).to.include(`charge`).and.include(`1 of ${failed}`);
        expect(after[2]).to.include('ship');
        expect(await page.locator('#durable tr', { hasText: 'resumed from' }).textContent()).to.include(failed);
        expect(readFileSync(ledger, 'utf8')).to.equal('charged\n');
        expect(pageProblems).to.deep.equal([]);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    });

    it("task page: a task's webhook (its URL's query values masked), the delivery left and its attempts (docs/webhooks.md)", async () => {
      // A task with a webhook, as an authenticated principal's call names one; this system delivers none (no
      // WEBHOOK_SECRET), so the attempt is made here through the engine calls a worker's delivery loop makes.
      const task = await engine.tasks.create({
        kind: TaskKind.Task,
        owner: 'principal:key:ops',
        sessionId: 'dashboard-webhook',
        tool: 'wait',
        arguments: { seconds: 0 },
        retrySafe: true,
        webhook: { url: 'https://hooks.example.com/done?token=s3cr3t', events: 'terminal' },
      });
      const { webhooks } = engine.store;
      await eventually(async () => ((await webhooks.pendingTasks()) > 0 ? true : undefined));
      const now = Date.now();
      const [claimed] = await webhooks.claim(now, 1, now + 60_000);
      const { head, record } = await webhooks.head(String(claimed));
      if (!head || !record) throw new Error('no delivery queued');
      const attempt = {
        id: head.id,
        status: head.status,
        attempt: 1,
        at: now,
        outcome: 'failed' as const,
        code: 503,
        error: 'HTTP 503: down for maintenance',
        ms: 12,
        worker: 'worker-test',
        nextAt: now + 60_000,
      };
      await webhooks.settle(record, now + 60_000, head, { outcome: 'retry', attempt, nextAt: now + 60_000 }, 50);
      await page.goto(`${base}/admin/tasks/${task.taskId}`);
      await page.waitForSelector('#webhook-attempts tbody tr');
      const rows = await page.locator('#webhook tr').allTextContents();
      expect(rows).to.include('urlhttps://hooks.example.com/done?token=*** (terminal changes)');
      expect(rows).to.include('deliveries leftcompleted (1 attempts)');
      const cells = await page.locator('#webhook-attempts tbody tr td').allTextContents();
      expect(cells.slice(1)).to.deep.equal([
        head.id,
        'completed',
        '1',
        'failed',
        'HTTP 503: down for maintenance',
        '12',
        'worker-test',
      ]);
      expect(await page.isHidden('#no-webhook')).to.equal(true);
      expect(await page.content()).not.to.include('s3cr3t');
      expect(pageProblems).to.deep.equal([]);
    });

    it('actions refuse what cannot be done (409), unknown tasks (404) and non-JSON posts (415)', async () => {
      const client = await McpTestClient.connect(system.apiUrl);
      const done = await client.createTask('wait', { seconds: 0 });
      await client.call('tasks/result', { taskId: done['taskId'] });
      const post = (path: string, type = 'application/json') =>
        fetch(`${base}/admin/api/tasks/${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type },
          body: '{}',
        });
      expect((await post(`${String(done['taskId'])}/cancel`)).status).to.equal(409);
      expect((await post(`${String(done['taskId'])}/retry`)).status).to.equal(409);
      expect((await post('00000000-0000-4000-8000-000000000000/cancel')).status).to.equal(404);
      expect((await post(`${String(done['taskId'])}/cancel`, 'application/x-www-form-urlencoded')).status).to.equal(
        415,
      );
    });

    it('charts of the last hour: figures from Redis drawn with uPlot, queue depth, per tool and per principal', async () => {
      const a = await McpTestClient.connect(system.apiUrl);
      const b = await McpTestClient.connect(system.apiUrl);
      const tasks = [
        await a.createTask('wait', { seconds: 0 }),
        await a.createTask('wait', { seconds: 0.2 }),
        await b.createTask('crash', { message: 'chart me' }),
        await b.createTask('count_primes', { below: 200_000 }),
      ];
      for (const [i, task] of tasks.entries()) {
        await (i < 2 ? a : b).rpc('tasks/result', { taskId: task['taskId'] });
      }
      const headers = { authorization: `Bearer ${TOKEN}` };
      // The api and the worker each send their figures within a flush interval (DASHBOARD_FLUSH_MS), in either order.
      const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
      const report = await eventually(async () => {
        const body = (await (await fetch(`${base}/admin/api/activity`, { headers })).json()) as ActivityJson;
        const wait = body.tools.find((tool) => tool.tool === 'wait');
        const owners = body.owners.map((owner) => owner.owner);
        return sum(body.finished.failed) >= 1 &&
          (wait?.finished.completed ?? 0) >= 2 &&
          sum(body.created) >= tasks.length &&
          owners.includes(ownerLabelOf(a)) &&
          owners.includes(ownerLabelOf(b))
          ? body
          : undefined;
      }, 15_000);
      expect(report.minutes).to.have.length(60);
      expect(sum(report.created)).to.be.at.least(tasks.length);
      expect(report.runTimeMs.p95.some((value) => value !== null)).to.equal(true);
      expect(report.queueWaitMs.p50.some((value) => value !== null)).to.equal(true);
      // Queue depth: a sample is taken when the figures are read, so the hour has at least one.
      for (const state of ['waiting', 'active', 'delayed', 'held'] as const) {
        expect(report.depth[state]).to.have.length(60);
        expect(report.depth[state].some((value) => typeof value === 'number')).to.equal(true);
      }
      expect(report.owners.map((owner) => owner.owner)).to.include.members([ownerLabelOf(a), ownerLabelOf(b)]);

      await page.goto(`${base}/admin`);
      await page.waitForSelector('#charts[data-updated]');
      expect(await page.$$eval('#charts .uplot', (plots) => plots.length)).to.equal(3);
      expect(await page.$$eval('#charts canvas', (canvases) => canvases.length)).to.be.at.least(3);
      // Latencies span milliseconds to hours: a log axis keeps a slow tool's tail from flattening the rest.
      expect(await page.getAttribute('#chart-latency', 'data-y-scale')).to.equal('log');
      expect(await page.getAttribute('#chart-tasks', 'data-y-scale')).to.equal('linear');
      await page.waitForSelector('#per-tool tr[data-key="count_primes"]');
      await page.waitForSelector(`#per-principal tr[data-key="${ownerLabelOf(b)}"]`);
      await shoot(page, 'dashboard.png');
      expect(pageProblems).to.deep.equal([]);
    });

    it('serves bull-board for the queue, read-only', async () => {
      await page.goto(`${base}/admin/queues`);
      await page.waitForSelector('text=tools', { timeout: 10_000 });
      expect(await page.title()).to.equal('mcp-task-runner');
    });
  });
});

describe('DASHBOARD_FIGURES=false (api and worker in process)', function () {
  this.timeout(60_000);
  let system: System;
  before(async () => {
    system = await startSystem({ env: { ADMIN_TOKEN: TOKEN, DASHBOARD_FIGURES: 'false' } });
  });
  after(async () => {
    await system?.stop();
  });

  it('records no per-minute figures: no activity keys in Redis after tasks ran and the api and worker stopped', async () => {
    const client = await McpTestClient.connect(system.apiUrl);
    const task = await client.createTask('wait', { seconds: 0 });
    await client.call('tasks/result', { taskId: task['taskId'] });
    const base = system.apiUrl.replace(/\/mcp$/, '');
    const report = (await (
      await fetch(`${base}/admin/api/activity`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as ActivityJson;
    expect(report.created.every((count) => count === 0)).to.equal(true);
    // Stopped, a process sends the figures it holds: with the figures off there are none.
    for (const child of [...system.apis, ...system.workers]) await child.stop('SIGTERM');
    expect(await system.redis.keys(`${system.prefix}:activity:*`)).to.deep.equal([]);
  });
});

interface ActivityJson {
  minutes: number[];
  created: number[];
  finished: { completed: number[]; failed: number[]; cancelled: number[] };
  queueWaitMs: { p50: (number | null)[] };
  runTimeMs: { p95: (number | null)[] };
  depth: Record<'waiting' | 'active' | 'delayed' | 'held', (number | null)[]>;
  tools: { tool: string; finished: { completed: number } }[];
  owners: { owner: string }[];
}

/** What operators see of a session id (docs/security.md, "Operators' views"): its SHA-256, first 16 hex digits. */
function digestOf(sessionId: string): string {
  return `sha256:${createHash('sha256').update(sessionId).digest('hex').slice(0, 16)}`;
}

function ownerLabelOf(client: McpTestClient): string {
  return `session:${digestOf(String(client.sessionId))}`;
}

function basic(user: string, password: string): string {
  return Buffer.from(`${user}:${password}`).toString('base64');
}
