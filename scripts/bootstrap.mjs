#!/usr/bin/env node
// Lets `npm start` / `npm test` work on a machine that has only Node 20 and npm: installs the workspace with the
// pinned pnpm (through npx) when node_modules is missing or older than the lockfile, then runs the given bin.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [bin, ...args] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node scripts/bootstrap.mjs <bin> [args...]');
  process.exit(2);
}

function installIsCurrent() {
  const marker = join(root, 'node_modules', '.modules.yaml');
  const lock = join(root, 'pnpm-lock.yaml');
  if (!existsSync(marker)) return false;
  return !existsSync(lock) || statSync(marker).mtimeMs >= statSync(lock).mtimeMs;
}

if (!installIsCurrent()) {
  const { packageManager } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  console.error(`[bootstrap] installing dependencies with ${packageManager} ...`);
  const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
  const frozen = existsSync(join(root, 'pnpm-lock.yaml')) ? ['--frozen-lockfile'] : [];
  const result = spawnSync(npx, ['-y', packageManager, 'install', ...frozen], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('[bootstrap] dependency install failed; see the output above.');
    process.exit(result.status ?? 1);
  }
}

const localBin = join(root, 'node_modules', '.bin', bin);
const command = bin === 'node' ? process.execPath : localBin;
const child = spawn(command, args, { cwd: process.cwd(), stdio: 'inherit' });
// Ctrl-C reaches the child through the terminal's process group; a SIGTERM sent to us alone is passed on.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 1 : 1)));
