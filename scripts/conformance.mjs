#!/usr/bin/env node
// Runs the official MCP conformance suite against one real api and one worker on a Redis of their own: the
// generic 2025-11-25 server scenarios on the legacy wire, the 2026-07-28 scenarios that apply to a server with tools
// on the stateless wire, and the ten tasks-extension scenarios. The worker serves the suite's fixture tools
// (scripts/conformance/tools.ts). Prints a summary table and exits non-zero when a scenario fails that is not in
// EXPECTED_FAILURES.
//
//   pnpm conformance                            # every scenario below
//   pnpm conformance ping tasks-lifecycle       # only these (at every revision listed for them)
//
// The suite needs Node 22; `npx -p node@22` supplies it without touching the system Node. REDIS_URL, when set,
// is used instead of starting a redis-server (keys go under a fresh `conformance-<random>` prefix).
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
// Runs under tsx (package.json), which lets this plain script share the TypeScript helper.
import { NODE_22_PACKAGE, NPX_CACHED } from './lib/downloads.ts';
import { freePort } from './lib/ports.ts';

const CONFORMANCE_PACKAGE = '@modelcontextprotocol/conformance@0.2.0-alpha.12';
const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';
/** An extension scenario picks its own revision (2026-07-28): no --spec-version (docs/protocol.md, "Conformance"). */
const EXTENSION = undefined;
const SCENARIOS = [
  ...[
    'server-initialize',
    'server-session-lifecycle',
    'ping',
    'tools-list',
    'dns-rebinding-protection',
    'server-sse-multiple-streams',
  ].map((name) => ({ name, spec: LEGACY })),
  ...[
    'server-stateless',
    'tools-list',
    'tools-call-simple-text',
    'tools-call-image',
    'tools-call-audio',
    'tools-call-embedded-resource',
    'tools-call-mixed-content',
    'tools-call-error',
    'tools-call-with-progress',
    'server-sse-multiple-streams',
    'dns-rebinding-protection',
    'caching',
    'input-required-result-basic-elicitation',
    'input-required-result-basic-sampling',
    'input-required-result-basic-list-roots',
    'input-required-result-request-state',
    'input-required-result-multiple-input-requests',
    'input-required-result-multi-round',
    'input-required-result-missing-input-response',
    'input-required-result-non-tool-request',
    'input-required-result-result-type',
    'input-required-result-unsupported-methods',
    'input-required-result-tampered-state',
    'input-required-result-capability-check',
    'input-required-result-ignore-extra-params',
    'input-required-result-validate-input',
  ].map((name) => ({ name, spec: MODERN })),
  ...[
    'tasks-capability-negotiation',
    'tasks-lifecycle',
    'tasks-dispatch-and-envelope',
    'tasks-mrtr-input',
    'tasks-mrtr-composition',
    'tasks-request-headers',
    'tasks-wire-fields',
    'tasks-request-state-removal',
    'tasks-required-task-error',
    'tasks-status-notifications',
  ].map((name) => ({ name, spec: EXTENSION })),
];
/**
 * Checks known to fail, `<scenario>@<revision>:<check id>` -> why (docs/protocol.md, "Conformance"). A listed check
 * that passes is reported, so the list only shrinks.
 */
const EXPECTED_FAILURES = new Map([
  [
    'input-required-result-non-tool-request@2026-07-28:sep-2322-non-tool-incomplete',
    'The runner serves tools only: it has no prompt to answer prompts/get with an InputRequiredResult.',
  ],
]);
/** The first run may download Node 22 and the suite; later runs hit the npx cache. */
const SCENARIO_TIMEOUT_MS = 120_000;
const READY_TIMEOUT_MS = 30_000;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chosen = process.argv.slice(2);
const scenarios = chosen.length > 0 ? SCENARIOS.filter((s) => chosen.includes(s.name)) : SCENARIOS;

/** Releases run newest first, also when start-up fails half way or the run is interrupted. */
const cleanups = [];
let cleaning;
let interrupted = false;
function cleanup() {
  cleaning ??= (async () => {
    for (const release of cleanups.splice(0).reverse()) {
      try {
        await release();
      } catch (error) {
        console.error(`[conformance] cleanup step failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    interrupted = true;
    void cleanup().then(() => process.exit(130));
  });
}

/**
 * Spawns a child in its own process group (so npx and the Node it starts stop together), keeps its output (shown
 * if something goes wrong) and registers its stop.
 */
function start(name, command, args, options = {}) {
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options });
  const output = [];
  const onData = (chunk) => output.push(chunk.toString());
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  let ended = false;
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true;
      resolve(code ?? (signal ? 128 : 1));
    });
    child.on('error', (error) => {
      ended = true;
      output.push(`${command}: ${error.message}\n`);
      resolve(127);
    });
  });
  const kill = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const stop = async () => {
    if (ended || child.pid === undefined) return;
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  cleanups.push(stop);
  return { name, child, output: () => output.join(''), exited, isEnded: () => ended, kill };
}

/** Resolves when `check()` is true; rejects when the child exits first or the time is up. */
async function waitFor(handle, what, check) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await check())) {
    if (handle.isEnded()) {
      throw new Error(
        `${handle.name} ended (exit ${String(handle.child.exitCode)}) before ${what}:\n${handle.output()}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`${handle.name}: no ${what} within ${READY_TIMEOUT_MS} ms:\n${handle.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function redisPing(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(1000);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('close', () => resolve(reply.startsWith('+PONG')));
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => socket.destroy());
  });
}

async function startRedis() {
  if (process.env.REDIS_URL) return process.env.REDIS_URL;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mcpt-conformance-redis-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const redis = start('redis-server', 'redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  try {
    await waitFor(redis, 'PONG', () => redisPing(port));
  } catch (error) {
    throw new Error(`${error.message}\n(redis-server must be on PATH, or set REDIS_URL to a Redis you own)`);
  }
  return `redis://127.0.0.1:${port}`;
}

async function startService(name, entry, env, ready) {
  const handle = start(name, process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env },
  });
  await waitFor(handle, `'${ready.source}' in its log`, () => ready.test(handle.output()));
  return handle;
}

// npx resolves Node 22 and the suite once; each scenario then runs them directly (npx per scenario cost seconds each).
async function locateSuite() {
  const { stdout } = await promisify(execFile)(
    process.platform === 'win32' ? 'npx.cmd' : 'npx',
    [...NPX_CACHED, '-p', NODE_22_PACKAGE, '-p', CONFORMANCE_PACKAGE, '-c', 'command -v node; command -v conformance'],
    { env: { ...process.env, npm_config_loglevel: 'error' }, timeout: 240_000, maxBuffer: 1 << 20 },
  );
  const [node, bin] = stdout.trim().split('\n');
  if (!node || !bin) throw new Error(`Node 22 or the conformance suite not found after npx:\n${stdout}`);
  return { node, bin };
}

/** Runs one scenario under Node 22 and reads its checks.json. */
async function runScenario(suite, { name: scenario, spec }, url, outputDir) {
  const args = [
    suite.bin,
    'server',
    '--url',
    url,
    '--scenario',
    scenario,
    ...(spec !== undefined ? ['--spec-version', spec] : []),
    '-o',
    outputDir,
  ];
  const started = Date.now();
  const run = start(`conformance ${scenario}`, suite.node, args, {
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', npm_config_loglevel: 'error' },
  });
  const timer = setTimeout(() => run.kill('SIGKILL'), SCENARIO_TIMEOUT_MS);
  const code = await run.exited;
  clearTimeout(timer);
  const checks = readChecks(outputDir);
  const label = `${scenario}@${spec ?? 'extension'}`;
  const failures = checks.filter((check) => check.status === 'FAILURE');
  const failed = failures.filter((check) => !EXPECTED_FAILURES.has(`${label}:${check.id}`));
  const expected = failures.length - failed.length;
  const passed = checks.filter((check) => check.status === 'SUCCESS');
  const other = checks.length - failures.length - passed.length;
  return {
    scenario: label,
    ok: checks.length > 0 && failed.length === 0 && (code === 0 || expected > 0),
    code,
    checks,
    summary:
      `${passed.length} passed, ${failed.length} failed` +
      `${expected ? `, ${expected} expected failures` : ''}${other ? `, ${other} info/warning/skipped` : ''}`,
    seconds: (Date.now() - started) / 1000,
    output: run.output(),
  };
}

function readChecks(dir) {
  const files = [];
  const walk = (path) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(path, entry.name));
      else if (entry.name === 'checks.json') files.push(join(path, entry.name));
    }
  };
  try {
    walk(dir);
  } catch {
    return [];
  }
  return files.flatMap((file) => JSON.parse(readFileSync(file, 'utf8')));
}

function printTable(results) {
  const rows = [
    ['scenario', 'result', 'checks', 'time'],
    ...results.map((r) => [r.scenario, r.ok ? 'pass' : 'FAIL', r.summary, `${r.seconds.toFixed(1)}s`]),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ');
  console.log(`\n${line(rows[0])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of rows.slice(1)) console.log(line(row));
}

async function main() {
  const redisUrl = await startRedis();
  const env = { REDIS_URL: redisUrl, REDIS_PREFIX: `conformance-${randomUUID().slice(0, 8)}` };
  const port = await freePort();
  const [api, worker] = await Promise.all([
    startService('api', 'apps/api/src/main.ts', { ...env, HOST: '127.0.0.1', PORT: String(port) }, /listening on/),
    startService(
      'worker',
      'apps/worker/src/main.ts',
      { ...env, MCPT_TOOLS: './scripts/conformance/tools.ts' },
      /worker ready/,
    ),
  ]);
  // `localhost`, as the suite's docs use it: dns-rebinding-protection derives its "valid" Host from this URL.
  const url = `http://localhost:${port}/mcp`;
  console.log(`[conformance] ${CONFORMANCE_PACKAGE} against ${url}`);

  const outputRoot = mkdtempSync(join(tmpdir(), 'mcpt-conformance-'));
  cleanups.push(() => rmSync(outputRoot, { recursive: true, force: true }));
  const suite = await locateSuite();
  const results = [];
  for (const scenario of scenarios) {
    const result = await runScenario(
      suite,
      scenario,
      url,
      join(outputRoot, `${scenario.name}-${scenario.spec ?? 'ext'}`),
    );
    if (interrupted) return 130;
    results.push(result);
    console.log(`[conformance] ${result.scenario}: ${result.ok ? 'pass' : 'FAIL'} (${result.summary})`);
  }

  printTable(results);
  const failures = results.filter((r) => !r.ok);
  for (const failure of failures) {
    console.log(`\n--- ${failure.scenario} (exit ${failure.code})`);
    for (const check of failure.checks.filter(
      (c) => c.status === 'FAILURE' && !EXPECTED_FAILURES.has(`${failure.scenario}:${c.id}`),
    )) {
      console.log(
        `  ${check.id}: ${check.description}\n    ${check.errorMessage ?? JSON.stringify(check.details ?? {})}`,
      );
    }
    if (failure.checks.length === 0) console.log(failure.output);
  }
  if (failures.length > 0) {
    console.log(`\n--- api log\n${api.output()}\n--- worker log\n${worker.output()}`);
  }
  return failures.length === 0 ? 0 : 1;
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  console.error(`[conformance] ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await cleanup();
}
process.exit(exitCode);
