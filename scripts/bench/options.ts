// Command-line options of `pnpm bench`: parsed once into a checked, defaulted, frozen object.

export const WORKLOADS = [
  'throughput',
  'latency',
  'steps',
  'reads',
  'footprint',
  'expiry',
  'scaleout',
  'replicas',
  'gateway',
] as const;
export type Workload = (typeof WORKLOADS)[number];

export interface BenchOptions {
  quick: boolean;
  /** Repetitions of each measurement; the table shows medians. */
  reps: number;
  /** Concurrent MCP clients (each with its own session) in the throughput and scale-out workloads. */
  clients: number;
  /** No-op tasks per throughput measurement. */
  tasks: number;
  /** Sequential round trips per latency measurement. */
  latencySamples: number;
  /** Requests per read measurement (tasks/get, tasks/list). */
  reads: number;
  /** Tasks stored for the small and the large read measurement. */
  small: number;
  large: number;
  /** Tasks per footprint measurement. */
  footprint: number;
  /** Tasks expiring at once per expiry measurement. */
  expiry: number;
  /** Worker process counts of the scale-out workload. */
  workers: number[];
  /** [api replicas, worker processes] of the replicas workload. */
  replicas: [number, number][];
  /** count_primes argument of the scale-out workload, and tasks per measurement. */
  primesBelow: number;
  primesTasks: number;
  /** WORKER_CONCURRENCY of our workers, and the concurrency of the raw BullMQ workers. */
  concurrency: number;
  /** Give up a measurement after this long and report what finished (keeps a run bounded on a slow machine). */
  measureTimeoutMs: number;
  only: Workload[];
  /** LOG_LEVEL of our api and workers: the shipped default is info, which logs a line or two per task. */
  logLevel: string;
  /** Clients accept only JSON (tasks/result then answers JSON, never an SSE stream); default: both, as the SDK. */
  jsonOnly: boolean;
  json?: string;
  help: boolean;
}

const FULL = {
  reps: 5,
  clients: 32,
  tasks: 2000,
  latencySamples: 300,
  reads: 200,
  small: 1000,
  large: 100_000,
  footprint: 2000,
  expiry: 10_000,
  workers: [1, 2, 4],
  replicas: [
    [1, 1],
    [1, 2],
    [2, 1],
    [2, 2],
    [3, 3],
    [4, 4],
  ] as [number, number][],
  // About 20 ms of CPU per task: the tool, not our per-task overhead (a few ms), should dominate scale-out.
  primesBelow: 5_000_000,
  primesTasks: 80,
  concurrency: 16,
  measureTimeoutMs: 30_000,
};

const QUICK: typeof FULL = {
  ...FULL,
  reps: 3,
  tasks: 1000,
  latencySamples: 100,
  reads: 60,
  large: 20_000,
  footprint: 1000,
  expiry: 5000,
  primesBelow: 3_000_000,
  primesTasks: 40,
  measureTimeoutMs: 10_000,
};

/** Scale-out measurements take the longest: at most this many repetitions of them. */
export const SCALE_OUT_MAX_REPS = 3;

export const USAGE = `usage: pnpm bench [--quick] [options]

Starts its own redis-server, api and worker processes and compares our runner with raw BullMQ on the same Redis.

  --quick                  a short run (about a minute), e.g. for CI
  --reps N                 repetitions per measurement; the table shows medians (${FULL.reps}, quick ${QUICK.reps})
  --clients N              concurrent MCP clients / raw producers (${FULL.clients})
  --tasks N                no-op tasks per throughput measurement (${FULL.tasks}, quick ${QUICK.tasks})
  --latency-samples N      sequential round trips per latency measurement (${FULL.latencySamples}, quick ${QUICK.latencySamples})
  --reads N                requests per read measurement (${FULL.reads}, quick ${QUICK.reads})
  --small N, --large N     tasks stored for the read measurements (${FULL.small} and ${FULL.large}, quick ${QUICK.large})
  --footprint N            tasks per memory measurement (${FULL.footprint}, quick ${QUICK.footprint})
  --expiry N               tasks expiring at once per expiry measurement (${FULL.expiry}, quick ${QUICK.expiry})
  --workers LIST           worker process counts for scale-out (${FULL.workers.join(',')})
  --replicas LIST          api replicas x worker processes of the replicas workload (${FULL.replicas.map(([a, w]) => `${a}x${w}`).join(',')})
  --primes-below N         count_primes argument for scale-out (${FULL.primesBelow}, quick ${QUICK.primesBelow})
  --primes-tasks N         count_primes tasks per scale-out measurement (${FULL.primesTasks}, quick ${QUICK.primesTasks});
                           scale-out runs at most ${SCALE_OUT_MAX_REPS} repetitions
  --concurrency N          worker concurrency, ours and raw (${FULL.concurrency})
  --timeout-seconds N      cut a measurement short after this long (${FULL.measureTimeoutMs / 1000}, quick ${QUICK.measureTimeoutMs / 1000})
  --only LIST              run some workloads: ${WORKLOADS.join(',')}
  --log-level LEVEL        LOG_LEVEL of our api and workers (info, the default of the processes)
  --json-only              clients accept only JSON; by default they also accept SSE, as the SDK's client does,
                           and tasks/result of a running task answers as an SSE stream
  --json FILE              also write every figure as JSON
  --help                   this text

Numbers accept _ separators and k/m suffixes (100k).`;

export class OptionsError extends Error {
  override readonly name = 'OptionsError';
}

/** Parses `--name value` / `--name=value` flags; throws OptionsError naming the flag and what it accepts. */
export function parseOptions(argv: readonly string[]): Readonly<BenchOptions> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) throw new OptionsError(`Unexpected argument '${arg}'; see --help`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (name === 'quick' || name === 'help' || name === 'json-only') {
      flags.set(name, 'true');
      continue;
    }
    let value = eq === -1 ? undefined : arg.slice(eq + 1);
    if (value === undefined) {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new OptionsError(`--${name} needs a value; see --help`);
      i++;
    }
    flags.set(name, value);
  }
  const quick = flags.get('quick') === 'true';
  const base = quick ? QUICK : FULL;
  const known = new Set([
    'quick',
    'help',
    'reps',
    'clients',
    'tasks',
    'latency-samples',
    'reads',
    'small',
    'large',
    'footprint',
    'expiry',
    'workers',
    'replicas',
    'primes-below',
    'primes-tasks',
    'concurrency',
    'timeout-seconds',
    'only',
    'log-level',
    'json-only',
    'json',
  ]);
  for (const name of flags.keys()) {
    if (!known.has(name)) throw new OptionsError(`Unknown option --${name}; see --help`);
  }
  const int = (name: string, fallback: number, min = 1): number => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    const value = parseCount(raw);
    if (value === undefined || value < min) {
      throw new OptionsError(`--${name} must be a whole number >= ${min} (like 3000, 3_000 or 3k), got '${raw}'`);
    }
    return value;
  };
  const list = (name: string): string[] | undefined =>
    flags
      .get(name)
      ?.split(',')
      .map((item) => item.trim())
      .filter(Boolean);

  const workers = (list('workers') ?? base.workers.map(String)).map((item) => {
    const value = parseCount(item);
    if (value === undefined || value < 1 || value > 64) {
      throw new OptionsError(`--workers must list process counts from 1 to 64 (like 1,2,4), got '${item}'`);
    }
    return value;
  });
  const replicas = (list('replicas') ?? base.replicas.map(([a, w]) => `${a}x${w}`)).map((item) => {
    const [apis, workers] = item.split('x').map(parseCount);
    if (apis === undefined || workers === undefined || apis < 1 || workers < 1 || apis > 16 || workers > 16) {
      throw new OptionsError(`--replicas must list <apis>x<workers> from 1 to 16 (like 1x1,2x2), got '${item}'`);
    }
    return [apis, workers] as [number, number];
  });
  const only = (list('only') ?? [...WORKLOADS]).map((item) => {
    if (!(WORKLOADS as readonly string[]).includes(item)) {
      throw new OptionsError(`--only accepts ${WORKLOADS.join(', ')}; got '${item}'`);
    }
    return item as Workload;
  });
  const small = int('small', base.small);
  const large = int('large', base.large);
  if (large < small) throw new OptionsError(`--large (${large}) must not be below --small (${small})`);
  const logLevel = flags.get('log-level') ?? 'info';
  if (!['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'].includes(logLevel)) {
    throw new OptionsError(`--log-level must be a LOG_LEVEL (error, warn, info, ...), got '${logLevel}'`);
  }
  const json = flags.get('json');
  return Object.freeze({
    quick,
    reps: int('reps', base.reps),
    clients: int('clients', base.clients),
    tasks: int('tasks', base.tasks),
    latencySamples: int('latency-samples', base.latencySamples),
    reads: int('reads', base.reads),
    small,
    large,
    footprint: int('footprint', base.footprint),
    expiry: int('expiry', base.expiry),
    workers,
    replicas,
    primesBelow: int('primes-below', base.primesBelow, 2),
    primesTasks: int('primes-tasks', base.primesTasks),
    concurrency: int('concurrency', base.concurrency),
    measureTimeoutMs: int('timeout-seconds', base.measureTimeoutMs / 1000) * 1000,
    only,
    logLevel,
    jsonOnly: flags.get('json-only') === 'true',
    ...(json !== undefined ? { json } : {}),
    help: flags.get('help') === 'true',
  });
}

/** "3000", "3_000", "3k", "1.5m" -> a whole number; undefined when it is not one. */
export function parseCount(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(text.replaceAll('_', '').trim());
  if (!match) return undefined;
  const scale = { '': 1, k: 1000, m: 1_000_000 }[(match[2] ?? '').toLowerCase()] ?? 1;
  const value = Number(match[1]) * scale;
  return Number.isSafeInteger(value) ? value : undefined;
}
