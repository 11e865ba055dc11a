#!/usr/bin/env node
// `pnpm lint` (and `pnpm test`, beside the tests): ESLint, Prettier's check and the import checker, each run even
// when one before it failed, so that one run shows every kind of finding; fails when any did.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const steps = [
  [bin('eslint'), ['.']],
  [bin('prettier'), ['--check', '.']],
  [process.execPath, [join(root, 'scripts', 'check-imports.mjs')]],
];
let failed = false;
for (const [command, args] of steps) {
  if (spawnSync(command, args, { cwd: root, stdio: 'inherit' }).status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
