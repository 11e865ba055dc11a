// Interop with MCP Inspector's web UI (2.12), code we did not write, as a user drives it: its Node server on
// 127.0.0.1 (which relays the page's MCP traffic to our api over Streamable HTTP), the page in headless chromium,
// and real api and worker processes, on both eras. What is asserted is what the page shows, checked against the task
// records in Redis. The web UI keeps one connection, so it sees its own tasks without an API key.
import { expect } from 'chai';
import type { Locator, Page } from 'playwright-core';
import { DOWNLOADS_TAG } from '../../scripts/lib/downloads.ts';
import { launchChromium, removeScreenshots, shoot, skipWithoutChromium } from '../support/browser.ts';
import { startInspectorWeb, type InspectorWeb } from '../support/inspector-web.ts';
import { eventually } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/processes.ts';

// The rules each test proves, per revision (2025-11-25 T-*, 2026-07-28 C26-* and the tasks extension's X-*).
const ERAS = [
  {
    era: 'legacy',
    version: '2025-11-25',
    screenshot: 'inspector-web.png',
    rules: {
      connect: 'T-CAP-1',
      result: 'T-TOOL-4, T-RES-1',
      cancel: 'T-PROG-1, T-CANCEL-2',
      input: 'T-INPUT-1, T-INPUT-3',
    },
  },
  {
    era: 'modern',
    version: '2026-07-28',
    screenshot: 'inspector-web-modern.png',
    rules: { connect: 'C26-COEX-2', result: 'X-NEG-1, X-GET-1', cancel: 'X-CAN-2', input: 'X-UPD-1, X-UPD-6' },
  },
] as const;
const TASK_ID = /ID: ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/g;

describe(`MCP Inspector 2.12 web UI against our api (headless chromium; real processes) ${DOWNLOADS_TAG}`, function () {
  this.timeout(120_000);
  let system: System;

  before(async function () {
    skipWithoutChromium(this);
    system = await startSystem();
  });
  after(async () => {
    await system?.stop();
    removeScreenshots();
  });

  for (const { era, version, screenshot, rules } of ERAS) {
    describe(`${version} era (--protocol-era ${era})`, () => {
      let web: InspectorWeb;
      let page: Page;
      let release: () => Promise<void>;

      before(async function () {
        this.timeout(300_000); // the first run downloads Node 22 and the Inspector
        web = await startInspectorWeb({ serverUrl: system.apiUrl, era });
        let context;
        ({ context, release } = await launchChromium({ viewport: { width: 1400, height: 900 } }));
        // The page links web fonts; on a closed network they are refused at once rather than timing out.
        await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => route.abort());
        page = context.pages()[0] ?? (await context.newPage());
        page.setDefaultTimeout(60_000);
      });
      // What the page showed when a step failed, for a failure seen only in CI (no screenshot survives the run).
      afterEach(async function () {
        if (this.currentTest?.state !== 'failed' || !page) return;
        const shown = await page.innerText('body', { timeout: 5_000 }).catch((error: unknown) => String(error));
        console.log(
          `      the page showed:\n${shown.slice(0, 3_000)}\n      the Inspector logged:\n${web.logs.slice(-20).join('\n')}`,
        );
      });
      after(async () => {
        await release?.();
        await web?.stop();
      });

      const text = () => page.innerText('body');
      /** The status badge of a task in the Tasks panel (the UI writes the status in words: "input required"). */
      const badge = (label: string) =>
        page.locator('.mantine-Badge-label', { hasText: new RegExp(`^${label}$`) }).first();
      const status = async (taskId: string) => system.redis.hget(`${system.prefix}:task:${taskId}`, 'status');
      /**
       * Turns a Mantine switch on. Its track lies over the input and takes the pointer, so the input is checked with
       * force, and force skips the wait for it to be visible: on a page still laying out (a freshly installed
       * chromium in CI) it had no box yet and the check failed at once. The wait comes first.
       */
      const turnOn = async (toggle: Locator) => {
        await toggle.waitFor({ state: 'visible' });
        await toggle.check({ force: true });
      };
      const tasksOnPage = async () => new Set([...(await text()).matchAll(TASK_ID)].map((match) => String(match[1])));
      /** Opens a tool's form, fills it and runs it; returns the id of the task the Tasks panel shows for it. */
      const runTool = async (tool: string, fill: (page: Page) => Promise<void>): Promise<string> => {
        // Cleared finished tasks leave the panel with the new task only, so a status badge is that task's.
        const clear = page.getByRole('button', { name: 'Clear', exact: true });
        if (await clear.count()) await clear.click();
        const before = await tasksOnPage();
        await page.getByText(tool, { exact: true }).first().click();
        await fill(page);
        await page.getByRole('button', { name: 'Execute Tool' }).click();
        return eventually(async () => [...(await tasksOnPage())].find((id) => !before.has(id)), 60_000, 200);
      };

      it(`${rules.connect}: connects over Streamable HTTP on ${version} and lists our tools`, async () => {
        await page.goto(web.url);
        await turnOn(page.getByRole('switch').first());
        await page.getByText('Connected', { exact: true }).waitFor();
        await page.getByText(`MCP ${version}`, { exact: true }).waitFor();
        await page.getByText('Tools', { exact: true }).first().click();
        await page.getByText(/^Tools \(\d+\)$/).waitFor();
        for (const tool of ['count_primes', 'wait', 'ask_user']) {
          await page.getByText(tool, { exact: true }).first().waitFor();
        }
      });

      it(`${rules.result}: runs count_primes as a task; the page shows the result and the task completed, as its record says`, async () => {
        const taskId = await runTool('count_primes', async () => {
          if (era === 'legacy') {
            // taskSupport "required": the UI turns "Run as task" on and does not let it be turned off.
            const asTask = page.getByRole('switch', { name: 'Run as task' });
            expect(await asTask.isChecked()).to.equal(true);
            expect(await asTask.isDisabled()).to.equal(true);
          }
          await page.getByRole('textbox', { name: 'below' }).fill('30000000');
        });
        await page.getByText('There are 1857859 primes below 30000000.').first().waitFor();
        await badge('completed').waitFor();
        expect(await status(taskId)).to.equal('completed');
        const record = await system.redis.hmget(`${system.prefix}:task:${taskId}`, 'tool', 'kind');
        expect(record).to.deep.equal(['count_primes', 'task']);
        if (era === 'legacy') await shoot(page, screenshot, { fullPage: false });
      });

      it(`${rules.cancel}: a running task shows its progress; "Cancel Task" cancels it, on the page and in its record`, async () => {
        const taskId = await runTool('wait', async () => {
          await page.getByRole('textbox', { name: 'seconds' }).fill('60');
          // On 2025-11-25 a tool with taskSupport "optional" runs as a task when asked; on 2026-07-28 the UI
          // declares the tasks extension and the server makes the call a task (there is no switch).
          if (era === 'legacy') await turnOn(page.getByRole('switch', { name: 'Run as task' }));
        });
        await badge('working').waitFor();
        await page
          .getByText(/waited \d+s of 60s/)
          .first()
          .waitFor();
        expect(await status(taskId)).to.equal('working');
        await page.getByRole('button', { name: 'Cancel Task' }).click();
        await badge('cancelled').waitFor();
        expect(await eventually(async () => ((await status(taskId)) === 'cancelled' ? true : undefined), 30_000)).to.be
          .true;
      });

      it(`${rules.input}: an elicitation of a task opens a dialog; the answer submitted there completes the task with it`, async () => {
        const taskId = await runTool('ask_user', async () => {
          await page.getByRole('textbox', { name: 'question' }).fill('Favourite colour?');
        });
        const dialog = page.getByRole('dialog');
        await dialog.getByText('Favourite colour?').first().waitFor();
        await badge('input required').waitFor();
        expect(await status(taskId)).to.equal('input_required');
        if (era === 'modern') await shoot(page, screenshot, { fullPage: false });
        await dialog.getByRole('textbox', { name: 'Answer' }).fill('teal');
        await dialog.getByRole('button', { name: 'Submit' }).click();
        // The tool's result, under "Results"; the answer field is gone with its dialog.
        await page.getByText('teal', { exact: true }).first().waitFor();
        await badge('completed').waitFor();
        expect(await text()).to.match(/Results\s+teal/);
        expect(await status(taskId)).to.equal('completed');
      });
    });
  }
});
