#!/usr/bin/env node
// `pnpm test`: every check CI runs. The test files run in MCPT_TEST_SHARDS mocha processes side by side (default 2:
// the integration tests mostly wait on processes, Redis and timers, so two shards take about half the time on two
// cores), balanced by the durations in test/timings.json (`node scripts/test.mjs --record-timings` rewrites it).
// Beside the shards, one after the other in a lane of the lowest priority, run the checks the tests do not need: the
// type-check (tsx runs the tests untyped), the lint (`pnpm lint`) and the MCP conformance suite (`pnpm conformance`),
// after the tarball the package tests install (built ahead, so that they find it built).
// They are minutes of one core's work that the waiting shards leave free; their output is printed after the tests',
// and a failed check fails the run. Each shard has its own port range, its own redis-servers and its own output,
// printed whole and in order; the last line sums them: "N passed, N failed, N skipped".
// With REDIS_URL set the tests share that one Redis, so they run in one process, after the checks.
// Files named on the command line run in one process too, after the type-check only. `--fast` runs the tests alone:
// `pnpm test:one <file>` is `node scripts/test.mjs --fast <file>`, one file in seconds (docs/tests.md).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const TIMINGS = join(root, 'test', 'timings.json');
/** Shards pick ports in 10000-19999, split evenly; a Redis cluster node's bus port (+10000) stays outside them all. */
const PORTS = { low: 10_000, count: 10_000 };
/** The guess for a file test/timings.json does not know yet (ms). */
const UNKNOWN_MS = { unit: 1_000, integration: 20_000 };
const SUMMARY = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m;

function step(title, command, args) {
  console.log(`\n== ${title}`);
  const started = Date.now();
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  done(title, started, result.status === 0);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/**
 * A command run beside the shards, its output kept for when they have ended. At the lowest priority: it takes the
 * cores the shards leave idle, and never slows a test whose budget is counted in milliseconds.
 */
function background(command, args) {
  const started = Date.now();
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    setPriority(child.pid, 19);
  } catch {
    // Not allowed here (or no such process any more): it runs at the shards' priority.
  }
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk.toString()));
  child.stderr.on('data', (chunk) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.on('close', (code) => resolve({ output, ok: code === 0, seconds: (Date.now() - started) / 1000 }));
  });
}

/**
 * The checks the tests do not need (their commands are also `pnpm lint` and `pnpm conformance`), after the pack the
 * package's tests install: built ahead in the lane, it is in the cache when they get to it (packed-runner.ts, whose
 * lock makes a test that comes first wait for it).
 */
function checks(all) {
  const typeCheck = { title: 'type-check', command: bin('tsc'), args: ['-p', 'tsconfig.json'] };
  if (!all) return [typeCheck];
  const pack = "const { packedTarball } = await import('./test/support/packed-runner.ts'); await packedTarball();";
  return [
    {
      title: 'pack (the tarball the package tests install)',
      command: process.execPath,
      args: ['--import', 'tsx', '--input-type=module', '--eval', pack],
    },
    typeCheck,
    { title: 'lint', command: process.execPath, args: ['scripts/lint.mjs'] },
    { title: 'conformance', command: process.execPath, args: ['--import', 'tsx', 'scripts/conformance.mjs'] },
  ];
}

/** The checks one after the other, beside the tests: one core's worth at most, whatever the shards leave idle. */
async function lane(list) {
  const results = [];
  for (const check of list) results.push({ title: check.title, ...(await background(check.command, check.args)) });
  return results;
}

function done(title, started, ok) {
  report(title, ok, (Date.now() - started) / 1000);
}

function report(title, ok, seconds) {
  console.log(`== ${title}: ${ok ? 'ok' : 'FAILED'} in ${seconds.toFixed(1)} s`);
}

function testFiles() {
  return ['test/unit', 'test/integration'].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true })
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `${dir}/${name}`)
      .sort(),
  );
}

/** Longest first, each to the shard with the least so far. */
function balance(files, shards) {
  let known = {};
  try {
    known = JSON.parse(readFileSync(TIMINGS, 'utf8'));
  } catch {
    // No timings yet: every file gets the guess of its kind.
  }
  const cost = (file) => known[file] ?? (file.startsWith('test/unit/') ? UNKNOWN_MS.unit : UNKNOWN_MS.integration);
  const groups = Array.from({ length: shards }, () => ({ files: [], ms: 0 }));
  for (const file of [...files].sort((a, b) => cost(b) - cost(a))) {
    const lightest = groups.reduce((min, group) => (group.ms < min.ms ? group : min));
    lightest.files.push(file);
    lightest.ms += cost(file);
  }
  // Within a shard the files run in the usual order (unit tests first, then by name), as in a single run.
  const order = new Map(files.map((file, i) => [file, i]));
  for (const group of groups) group.files.sort((a, b) => order.get(a) - order.get(b));
  return groups;
}

/** Runs the shards side by side; shard i's output is shown live once shards before it have ended, buffered till then. */
async function runShards(groups, timingsDir) {
  const size = Math.floor(PORTS.count / groups.length);
  let shown = 0;
  const shards = groups.map((group) => ({ ...group, output: '', buffered: '', code: undefined }));
  const advance = () => {
    while (shown < shards.length && shards[shown].code !== undefined) {
      shown++;
      if (shown < shards.length) process.stdout.write(shards[shown].buffered);
    }
  };
  await Promise.all(
    shards.map(
      (shard, i) =>
        new Promise((resolve) => {
          const low = PORTS.low + i * size;
          const child = spawn(bin('mocha'), shard.files, {
            cwd: root,
            env: {
              ...process.env,
              MCPT_PORT_RANGE: `${low}-${low + size - 1}`,
              MCPT_TEST_TIMINGS_OUT: join(timingsDir, `shard-${i}.json`),
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          const take = (chunk) => {
            const text = chunk.toString();
            shard.output += text;
            if (i === shown) process.stdout.write(text);
            else shard.buffered += text;
          };
          child.stdout.on('data', take);
          child.stderr.on('data', take);
          child.on('close', (code, signal) => {
            shard.code = code ?? signal;
            if (i === shown) advance();
            resolve();
          });
        }),
    ),
  );
  return shards;
}

function recordTimings(timingsDir, shards) {
  const merged = {};
  shards.forEach((_, i) => {
    try {
      Object.assign(merged, JSON.parse(readFileSync(join(timingsDir, `shard-${i}.json`), 'utf8')));
    } catch {
      // A shard that crashed wrote none: its files keep no figure.
    }
  });
  const sorted = Object.fromEntries(
    Object.keys(merged)
      .sort()
      .map((file) => [file, Math.round(merged[file] / 100) * 100]),
  );
  writeFileSync(TIMINGS, `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`== wrote ${Object.keys(sorted).length} file durations to test/timings.json`);
}

async function main() {
  const args = process.argv.slice(2);
  const record = args.includes('--record-timings');
  const fast = args.includes('--fast');
  const extra = args.filter((arg) => arg !== '--record-timings' && arg !== '--fast');
  const title = 'tests (unit + integration)';
  const shardCount = Number(process.env.MCPT_TEST_SHARDS ?? (process.env.REDIS_URL ? 1 : 2));
  const toCheck = fast ? [] : checks(extra.length === 0);
  if (extra.length > 0 || !(shardCount > 1)) {
    for (const check of toCheck) step(check.title, check.command, check.args);
    step(title, bin('mocha'), extra.length > 0 ? extra : ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts']);
    return;
  }
  const beside = lane(toCheck);
  if (toCheck.length > 0) {
    console.log(`\n== ${toCheck.map((check) => check.title).join(', ')}: beside the tests, their output after theirs`);
  }
  const groups = balance(testFiles(), shardCount);
  console.log(`\n== ${title}: ${groups.length} shards side by side (MCPT_TEST_SHARDS)`);
  groups.forEach((group, i) =>
    console.log(`   shard ${i + 1}: ${group.files.length} files, about ${Math.round(group.ms / 1000)} s`),
  );
  const started = Date.now();
  const timingsDir = mkdtempSync(join(tmpdir(), 'mcpt-timings-'));
  const shards = await runShards(groups, timingsDir);
  if (record) recordTimings(timingsDir, shards);
  rmSync(timingsDir, { recursive: true, force: true });
  const totals = [0, 0, 0];
  let ok = true;
  shards.forEach((shard, i) => {
    const summary = SUMMARY.exec(
      shard.output
        .split('\n')
        .filter((line) => SUMMARY.test(line))
        .pop() ?? '',
    );
    if (!summary || shard.code !== 0) ok = false;
    if (!summary) {
      console.log(`== shard ${i + 1} ended (${shard.code}) without its summary line: counted as one failure`);
      totals[1] += 1;
      return;
    }
    for (let k = 0; k < 3; k++) totals[k] += Number(summary[k + 1]);
  });
  done(title, started, ok && totals[1] === 0);
  for (const checked of await beside) {
    console.log(`\n== ${checked.title}`);
    process.stdout.write(checked.output);
    report(checked.title, checked.ok, checked.seconds);
    if (!checked.ok) ok = false;
  }
  // Last, as CI reads it: the tests' counts (a failed check fails the run with them).
  console.log(`${totals[0]} passed, ${totals[1]} failed, ${totals[2]} skipped`);
  process.exit(ok && totals[1] === 0 ? 0 : 1);
}

await main();
