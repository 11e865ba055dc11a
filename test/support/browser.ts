// Debian's chromium driven by playwright-core, for the tests that need a real browser (the dashboard, CORS).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
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
