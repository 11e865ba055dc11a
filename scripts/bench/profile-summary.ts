// Where a process's CPU goes, by phase: reads the .cpuprofile files `node --cpu-prof` wrote (the bench gives its
// children that flag with BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") and sums each function's self time into
// a phase by the module it lives in (HTTP and JSON-RPC parsing, auth and rate limits, validation, the Redis client,
// BullMQ, logging, our own modules, ...). Prints one Markdown table per process role (api, worker, bare-HTTP api,
// raw worker, ...), the role told by the entry module found in the profile.
//
//   node --import tsx scripts/bench/profile-summary.ts DIR [--top N]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderTable, type Table } from './report.ts';

interface CallFrame {
  functionName: string;
  url: string;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  /** Microseconds since the previous sample, one per sample. */
  timeDeltas: number[];
}

/** Phases in print order; `match` is tried on `url` (file URL or node: specifier) and `functionName`. */
const PHASES: { phase: string; match: (url: string, fn: string) => boolean }[] = [
  { phase: 'waiting (idle)', match: (url, fn) => url === '' && fn === '(idle)' },
  { phase: 'garbage collection', match: (url, fn) => url === '' && fn === '(garbage collector)' },
  {
    phase: 'start-up: module loading and compiling (not per task)',
    match: (url, fn) =>
      /\/node_modules\/(?:\.pnpm\/)?(?:tsx|esbuild|get-tsconfig)[@/]|^node:internal\/(?:modules\/|deps\/cjs-module-lexer|source_map\/|bootstrap\/)/.test(
        url,
      ) ||
      (url === '' &&
        /^(?:receiveMessageOnPort|compileFunction|compileFunctionForCJSLoader|readFileUtf8|internalModuleStat)$/.test(
          fn,
        )),
  },
  {
    phase: 'tracing (OpenTelemetry)',
    match: (url) => url.includes('/@opentelemetry/') || url.includes('@opentelemetry+'),
  },
  {
    phase: 'logging',
    match: (url) =>
      /\/node_modules\/(?:\.pnpm\/)?(?:winston|logform|pino|triple-beam|safe-stable-stringify)[@/+]/.test(url) ||
      /\/(?:engine\/src\/logger|engine\/src\/redis-log)\.ts$/.test(url),
  },
  {
    phase: 'validation (zod, schemas)',
    match: (url) =>
      /\/node_modules\/(?:\.pnpm\/)?(?:zod|ajv|@cfworker)[@/+]/.test(url) ||
      /\/protocol\/src\/(?:schemas|schema-validation|schema-refs|tool)\.ts$/.test(url),
  },
  {
    phase: 'auth and rate limits',
    match: (url) =>
      /\/api\/src\/(?:auth|http-guards|calls\/admission)\.ts$/.test(url) ||
      /\/engine\/src\/(?:rate-limiter|owner-caps|sessions)\.ts$/.test(url),
  },
  {
    phase: 'HTTP: express, middleware, body',
    match: (url) =>
      /\/node_modules\/(?:\.pnpm\/)?(?:express|router|body-parser|raw-body|finalhandler|send|serve-static|on-finished|type-is|accepts|content-type|negotiator|mime-types|qs|depd|debug|cors|iconv-lite|statuses|http-errors|proxy-addr|forwarded|parseurl|encodeurl|etag|fresh|range-parser|vary|cookie)[@/+]/.test(
        url,
      ) || /\/api\/src\/(?:transport\/|cors|request-origin|request-span|responses|sse|stream-reply|app)/.test(url),
  },
  {
    phase: 'node:http, net and streams (HTTP and Redis sockets)',
    match: (url) =>
      /^node:(?:_http_|http|https|net|stream|internal\/streams|internal\/http|internal\/stream_base|internal\/net|internal\/dns|dns|internal\/url|url|buffer|internal\/buffer|string_decoder|events|internal\/event_target|internal\/webstreams)/.test(
        url,
      ),
  },
  { phase: 'JSON parse and stringify', match: (url, fn) => url === '' && /^(?:parse|stringify)$/.test(fn) },
  {
    // Native socket writes and reads: the HTTP responses' and the Redis commands' alike.
    phase: 'socket writes and reads (native, HTTP and Redis)',
    match: (url, fn) =>
      url === '' &&
      /^(?:writev|writeBuffer|writeUtf8String|writeLatin1String|onStreamRead|readStop|readStart)$/.test(fn),
  },
  {
    phase: 'Redis client (ioredis: commands, replies)',
    match: (url) =>
      /\/node_modules\/(?:\.pnpm\/)?(?:ioredis|redis-parser|redis-errors|cluster-key-slot|denque|standard-as-callback|lodash\.)[@/+]/.test(
        url,
      ),
  },
  {
    phase: 'BullMQ',
    match: (url) => /\/node_modules\/(?:\.pnpm\/)?(?:bullmq|msgpackr|cron-parser|semver)[@/+]/.test(url),
  },
  { phase: 'MCP SDK', match: (url) => /@modelcontextprotocol[/+]/.test(url) },
  { phase: 'our api', match: (url) => /\/apps\/api\/src\//.test(url) },
  { phase: 'our worker', match: (url) => /\/apps\/worker\/src\//.test(url) },
  { phase: 'our engine (records, scripts, queues)', match: (url) => /\/packages\/engine\/src\//.test(url) },
  { phase: 'our protocol (JSON-RPC, records)', match: (url) => /\/packages\/protocol\/src\//.test(url) },
  { phase: 'our tools', match: (url) => /\/packages\/tools\/src\//.test(url) },
  { phase: 'the bench baseline itself', match: (url) => /\/scripts\/bench\//.test(url) },
  { phase: 'node: timers, promises, crypto, other internals', match: (url) => url.startsWith('node:') },
  { phase: 'native and V8 (program, builtins)', match: (url) => url === '' },
];

const OTHER = 'other modules';
/** Phases that are no work per task: waiting, and loading modules at start-up. */
const NOT_BUSY = new Set([PHASES[0]?.phase, PHASES[2]?.phase]);

/** The phase a function's self time counts to. */
export function phaseOf(frame: CallFrame): string {
  return PHASES.find(({ match }) => match(frame.url, frame.functionName))?.phase ?? OTHER;
}

/** Self time (ms) by phase, and by module (file), of one profile. */
export function summarizeProfile(profile: CpuProfile): { byPhase: Map<string, number>; byModule: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byPhase = new Map<string, number>();
  const byModule = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id);
    if (!frame) return;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const phase = phaseOf(frame);
    byPhase.set(phase, (byPhase.get(phase) ?? 0) + ms);
    if (NOT_BUSY.has(phase)) return;
    const module = frame.url === '' ? frame.functionName : shortModule(frame.url);
    byModule.set(module, (byModule.get(module) ?? 0) + ms);
  });
  return { byPhase, byModule };
}

/** node_modules/.pnpm/x@1/node_modules/x/dist/a.js -> x/dist/a.js; a repo file -> its path in the repo. */
function shortModule(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + '/node_modules/'.length);
  const repo = /\/(?:apps|packages|scripts)\/.*$/.exec(path);
  return repo ? repo[0].slice(1) : path;
}

/** The role of the process a profile came from, by the entry module it ran. */
export function roleOf(profile: CpuProfile): string {
  const urls = new Set(profile.nodes.map((node) => node.callFrame.url));
  const has = (suffix: string) => [...urls].some((url) => url.endsWith(suffix));
  if (has('/apps/api/src/main.ts')) return 'our api';
  if (has('/apps/worker/src/main.ts')) return 'our worker';
  if (has('/scripts/bench/bare-api.ts')) return 'bare-HTTP api';
  if (has('/scripts/bench/raw-worker.ts')) return 'raw BullMQ worker';
  if (has('/scripts/bench/sdk-peer.ts')) return 'SDK peer';
  if (has('/scripts/bench/main.ts')) return 'bench client';
  return 'module loader threads (tsx)';
}

/** One table per role: each phase's self time, its share of the busy time (idle and start-up left out). */
export function profileTables(profiles: readonly CpuProfile[], top = 12): Table[] {
  const byRole = new Map<string, { byPhase: Map<string, number>; byModule: Map<string, number>; count: number }>();
  for (const profile of profiles) {
    const role = roleOf(profile);
    const { byPhase, byModule } = summarizeProfile(profile);
    const into = byRole.get(role) ?? { byPhase: new Map(), byModule: new Map(), count: 0 };
    for (const [phase, ms] of byPhase) into.byPhase.set(phase, (into.byPhase.get(phase) ?? 0) + ms);
    for (const [module, ms] of byModule) into.byModule.set(module, (into.byModule.get(module) ?? 0) + ms);
    into.count++;
    byRole.set(role, into);
  }
  const notBusy = NOT_BUSY;
  const tables: Table[] = [];
  for (const [role, { byPhase, byModule, count }] of byRole) {
    const busy = [...byPhase].filter(([phase]) => !notBusy.has(phase)).reduce((total, [, ms]) => total + ms, 0);
    const order = [...PHASES.map(({ phase }) => phase), OTHER];
    const rows = [...byPhase]
      .sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]))
      .map(([phase, ms]) => [phase, ms.toFixed(0), notBusy.has(phase) ? '' : `${((100 * ms) / busy).toFixed(1)}%`]);
    const modules = [...byModule]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([module, ms]) => `${module} ${((100 * ms) / busy).toFixed(1)}%`);
    tables.push({
      title: `${role}: self time by phase (${count} process${count === 1 ? '' : 'es'})`,
      columns: ['phase', 'ms', 'share of busy time'],
      rows,
      notes: [`Top modules by self time (busy time only): ${modules.join(', ')}.`],
    });
  }
  return tables;
}

function main(argv: string[]): void {
  const dir = argv[0];
  if (!dir || dir.startsWith('--')) {
    console.error('usage: node --import tsx scripts/bench/profile-summary.ts DIR [--top N]');
    process.exitCode = 2;
    return;
  }
  const topAt = argv.indexOf('--top');
  const top = topAt === -1 ? 12 : Number(argv[topAt + 1]);
  const profiles = readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile);
  process.stdout.write(`${profileTables(profiles, top).map(renderTable).join('\n\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
