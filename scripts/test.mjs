#!/usr/bin/env node
// `pnpm test`: type-check, then every unit and integration test in one mocha run (it prints "N passed, N failed").
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

function step(title, command, args) {
  console.log(`\n== ${title}`);
  const started = Date.now();
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  console.log(
    `== ${title}: ${result.status === 0 ? 'ok' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const extra = process.argv.slice(2);
step('type-check', bin('tsc'), ['-p', 'tsconfig.json']);
step(
  'tests (unit + integration)',
  bin('mocha'),
  extra.length > 0 ? extra : ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
);
