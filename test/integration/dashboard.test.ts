// The admin dashboard in a real headless browser (Debian's chromium driven by playwright-core), against real api
// and worker processes: it loads behind ADMIN_TOKEN, lists a task just created and shows its status change; plus
// the auth rules and the JSON endpoints behind the page. Browser traffic targets 127.0.0.1 only.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/processes.ts';
import { track } from '../support/resources.ts';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'test-admin-token-0123456789abcdef';
const BROWSER_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('admin dashboard (ADMIN_TOKEN; headless chromium; real processes)', function () {
  this.timeout(60_000);
  let system: System;
  let base: string;

  before(async function () {
    if (!existsSync(CHROMIUM) && !process.env['CI']) {
      console.log(`    (skipped: ${CHROMIUM} is missing; apt-get install chromium, as .ci/run does)`);
      this.skip();
    }
    system = await startSystem({ env: { ADMIN_TOKEN: TOKEN, WORKER_SHUTDOWN_GRACE_MS: '500' } });
    base = system.apiUrl.replace(/\/mcp$/, '');
  });
  after(async () => {
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
        owner: `session:${String(client.sessionId)}`,
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

  describe('in a browser', () => {
    let context: BrowserContext;
    let page: Page;
    let release: () => Promise<void>;

    before(async () => {
      const profile = mkdtempSync(join(tmpdir(), 'mcpt-chromium-'));
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: BROWSER_ARGS,
        httpCredentials: { username: 'admin', password: TOKEN },
      });
      release = track('chromium', async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      });
      page = context.pages()[0] ?? (await context.newPage());
    });
    after(async () => {
      await release?.();
    });

    it('loads, lists a task created just now and shows its status change', async () => {
      await page.goto(`${base}/admin`);
      expect(await page.title()).to.equal('mcp-task-runner: tasks');
      const client = await McpTestClient.connect(system.apiUrl);
      const task = await client.createTask('wait', { seconds: 1.5 });
      const row = `tr[data-task-id="${String(task['taskId'])}"]`;
      await page.waitForSelector(`${row} td.status[data-status="working"]`, { timeout: 5000 });
      expect(await page.textContent(`${row} td:nth-child(3)`)).to.equal('wait');
      expect(await page.textContent(`${row} td:nth-child(4)`)).to.equal(`session:${String(client.sessionId)}`);
      await page.waitForSelector(`${row} td.status[data-status="completed"]`, { timeout: 10_000 });
      expect(await page.textContent(`${row} td:last-child`)).to.equal('The operation completed.');
      // A click shows the task's history.
      await page.click(row);
      await page.waitForSelector('#detail:has-text("completed")');
      const detail = await page.textContent('#detail');
      expect(detail).to.match(/history:\n.*working\s+The task is queued for a worker\./);
      expect(detail).to.match(/working\s+Running on worker-/);
      expect(detail).to.include('arguments: {"seconds":1.5}');
      await page.waitForSelector('.card[data-name="workers"]');
      expect(await page.textContent('.card[data-name="workers"] b')).to.equal('1');
    });

    it('serves bull-board for the queue, read-only', async () => {
      await page.goto(`${base}/admin/queues`);
      await page.waitForSelector('text=tools', { timeout: 10_000 });
      expect(await page.title()).to.equal('mcp-task-runner');
    });
  });
});

function basic(user: string, password: string): string {
  return Buffer.from(`${user}:${password}`).toString('base64');
}
