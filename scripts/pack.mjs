#!/usr/bin/env node
// `pnpm run pack`: builds the installable package (apps/runner, published as mcp-task-runner) and writes its
// tarball into dist/ at the repository root: dist/mcp-task-runner-<version>.tgz.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runner = join(root, 'apps', 'runner');
const out = join(root, 'dist');
const { packageManager } = JSON.parse((await import('node:fs')).readFileSync(join(root, 'package.json'), 'utf8'));
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

function run(args) {
  const result = spawnSync(npx, ['-y', packageManager, ...args], { cwd: runner, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

mkdirSync(out, { recursive: true });
run(['run', 'build']);
run(['pack', '--pack-destination', out]);
