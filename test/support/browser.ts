// Debian's chromium driven by playwright-core, for the tests that need a real browser (the dashboard, CORS).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { track } from './resources.ts';

const CHROMIUM = '/usr/bin/chromium';
// Without the background-networking flags, chromium's own connections are refused by a closed network, many at once.
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

/** Skips the suite outside CI when chromium is missing (CI installs it: .ci/run), saying how to get it. */
export function skipWithoutChromium(suite: Mocha.Context): void {
  if (existsSync(CHROMIUM) || process.env['CI']) return;
  console.log(`    (skipped: ${CHROMIUM} is missing; apt-get install chromium, as .ci/run does)`);
  suite.skip();
}

/** A headless chromium with a fresh profile; `release` closes it and removes the profile. */
export async function launchChromium(
  options: Parameters<typeof chromium.launchPersistentContext>[1] = {},
): Promise<{ context: BrowserContext; release: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'mcpt-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    ...options,
    executablePath: CHROMIUM,
    headless: true,
    args: BROWSER_ARGS,
  });
  const release = track('chromium', async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return { context, release };
}

const DOCS_IMAGES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'images');
const SCREENS_TMP = join(tmpdir(), `mcpt-screens-${process.pid}`);

/**
 * Takes a screenshot: into docs/images when UPDATE_SCREENSHOTS=1 (the pictures in the docs), else into a temporary
 * directory (the page must still render).
 */
export async function shoot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  const dir = process.env['UPDATE_SCREENSHOTS'] === '1' ? DOCS_IMAGES : SCREENS_TMP;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, name), fullPage: options.fullPage ?? true });
}

/** Removes the temporary screenshots of this process (none are kept unless UPDATE_SCREENSHOTS=1). */
export function removeScreenshots(): void {
  rmSync(SCREENS_TMP, { recursive: true, force: true });
}
