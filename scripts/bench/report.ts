// Turns a run's results into the printed tables (Markdown, so they paste into docs/benchmarks.md as they are).
// Pure: unit-tested in test/unit/bench.test.ts.
import type { BenchResults, Sides, ThroughputSample } from './results.ts';
import { median, ratio } from './stats.ts';

export type Align = 'left' | 'right';

export interface Table {
  title: string;
  columns: string[];
  align?: Align[];
  rows: string[][];
  notes?: string[];
}

/** A Markdown table with padded columns; the first column is left-aligned, the others right-aligned by default. */
export function renderTable(table: Table): string {
  const align = table.columns.map((_, i) => table.align?.[i] ?? (i === 0 ? 'left' : 'right'));
  const cells = [table.columns, ...table.rows].map((row) => table.columns.map((_, i) => row[i] ?? ''));
  const widths = table.columns.map((_, i) => Math.max(3, ...cells.map((row) => displayWidth(row[i] as string))));
  const pad = (text: string, i: number) => {
    const fill = ' '.repeat((widths[i] as number) - displayWidth(text));
    return align[i] === 'right' ? fill + text : text + fill;
  };
  const line = (row: string[]) => `| ${row.map(pad).join(' | ')} |`;
  const rule = `| ${widths
    .map((width, i) => (align[i] === 'right' ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width)))
    .join(' | ')} |`;
  const [header, ...body] = cells;
  const lines = [`### ${table.title}`, '', line(header as string[]), rule, ...body.map(line)];
  if (table.notes && table.notes.length > 0) lines.push('', ...table.notes);
  return lines.join('\n');
}

function displayWidth(text: string): number {
  return [...text].length;
}

/** 12,345 / 1.23 / n/a: thousands separators and a fixed number of decimals. */
export function fmt(value: number, decimals = 0): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** A number with the decimals its size deserves: 12,345 / 123 / 12.3 / 1.23 / 0.123. */
export function fmtAuto(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  const size = Math.abs(value);
  return fmt(value, size >= 100 ? 0 : size >= 10 ? 1 : size >= 1 ? 2 : 3);
}

export function fmtRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a';
}

export function fmtSigned(value: number, unit: string, decimals = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  return `${value >= 0 ? '+' : '-'}${Math.abs(value).toFixed(decimals)} ${unit}`;
}

/** "goal text: ok" or "goal text: MISSED"; the goal alone when the figure is missing. */
export function verdict(goal: string, met: boolean | undefined): string {
  if (met === undefined) return goal;
  return `${goal}: ${met ? 'ok' : 'MISSED'}`;
}

function medianOf<T>(samples: readonly T[], pick: (sample: T) => number): number {
  return median(samples.map(pick));
}

function met(value: number, test: (value: number) => boolean): boolean | undefined {
  return Number.isFinite(value) ? test(value) : undefined;
}

/** Every table of a run, in print order. */
export function buildTables(results: BenchResults): Table[] {
  const tables: Table[] = [];
  const reps = Number(results.options['reps']);
  const head = results.throughput ?? results.latency ?? results.footprint;
  if (head) tables.push(comparisonTable(results, reps));
  if (results.footprint) tables.push(memoryByKindTable(results.footprint));
  if (results.reads) tables.push(readsTable(results));
  if (results.expiry) tables.push(expiryTable(results.expiry));
  if (results.scaleout) tables.push(scaleOutTable(results));
  if (results.throughput) {
    tables.push(sizingTable(results.throughput));
    tables.push(commandsTable(results.throughput));
  }
  return tables;
}

function comparisonTable(results: BenchResults, reps: number): Table {
  const rows: string[][] = [];
  const clients = String(results.options['clients']);
  if (results.throughput) {
    const ours = medianOf(results.throughput.ours, (s) => s.tasksPerSecond);
    const raw = medianOf(results.throughput.raw, (s) => s.tasksPerSecond);
    const share = ratio(ours, raw);
    rows.push([
      `throughput, no-op tasks, ${clients} clients (tasks/s)`,
      fmt(ours),
      fmt(raw),
      fmtRatio(share),
      verdict(
        '>= 0.50x',
        met(share, (v) => v >= 0.5),
      ),
    ]);
  }
  if (results.latency) {
    for (const [label, key] of [
      ['p50', 'p50'],
      ['p99', 'p99'],
    ] as const) {
      const ours = medianOf(results.latency.ours, (s) => s[key]);
      const raw = medianOf(results.latency.raw, (s) => s[key]);
      const overhead = ours - raw;
      rows.push([
        `latency ${label}, create -> result, 1 client (ms)`,
        fmt(ours, 2),
        fmt(raw, 2),
        fmtSigned(overhead, 'ms'),
        key === 'p50'
          ? verdict(
              '<= +3 ms',
              met(overhead, (v) => v <= 3),
            )
          : '',
      ]);
      if (key === 'p50') {
        const oursCreate = medianOf(results.latency.ours, (s) => s.createP50 ?? Number.NaN);
        const rawCreate = medianOf(results.latency.raw, (s) => s.createP50 ?? Number.NaN);
        rows.push([
          'latency p50 of the create alone: tools/call / queue.add (ms)',
          fmt(oursCreate, 2),
          fmt(rawCreate, 2),
          fmtSigned(oursCreate - rawCreate, 'ms'),
          '',
        ]);
      }
    }
  }
  if (results.throughput) {
    const ours = medianOf(results.throughput.ours, (s) => s.commandsPerTask);
    const raw = medianOf(results.throughput.raw, (s) => s.commandsPerTask);
    rows.push(['Redis commands per task', fmt(ours, 1), fmt(raw, 1), fmtRatio(ratio(ours, raw)), '']);
  }
  if (results.footprint) {
    const { finished, waiting, resultBytes } = results.footprint;
    const beyond = finished.oursStored - resultBytes;
    rows.push([
      `Redis memory per finished task, keys growing with tasks (bytes; result is ${resultBytes})`,
      fmt(finished.oursStored),
      fmt(finished.rawStored),
      fmtRatio(ratio(finished.oursStored, finished.rawStored)),
      verdict(
        '<= 2 KiB + result',
        met(beyond, (v) => v <= 2048),
      ),
    ]);
    rows.push([
      'memory of the task record / the job hash alone (bytes)',
      fmt(finished.oursRecord),
      fmt(finished.rawJob),
      fmtRatio(ratio(finished.oursRecord, finished.rawJob)),
      '',
    ]);
    rows.push([
      'memory per finished task incl. event streams, used_memory delta (bytes)',
      fmt(finished.ours),
      fmt(finished.raw),
      fmtRatio(ratio(finished.ours, finished.raw)),
      '',
    ]);
    rows.push([
      'Redis memory per waiting task (no worker), keys growing with tasks (bytes)',
      fmt(waiting.oursStored),
      fmt(waiting.rawStored),
      fmtRatio(ratio(waiting.oursStored, waiting.rawStored)),
      '',
    ]);
    rows.push([
      'memory per waiting task incl. event streams, used_memory delta (bytes)',
      fmt(waiting.ours),
      fmt(waiting.raw),
      fmtRatio(ratio(waiting.ours, waiting.raw)),
      '',
    ]);
  }
  return {
    title: `Ours vs raw BullMQ (same Redis, same run; medians of ${reps} repetitions)`,
    columns: ['measure', 'ours', 'raw BullMQ', 'ours/raw', 'goal'],
    align: ['left', 'right', 'right', 'right', 'left'],
    rows,
  };
}

/** Where the bytes of one task go, key kind by key kind (MEMORY USAGE deltas; allocator overhead not included). */
function memoryByKindTable(footprint: NonNullable<BenchResults['footprint']>, top = 12): Table {
  const { oursFinished, oursWaiting, rawFinished, rawWaiting } = footprint.byKind;
  const rows = (side: 'ours' | 'raw BullMQ', finished: Record<string, number>, waiting: Record<string, number>) =>
    [...new Set([...Object.keys(finished), ...Object.keys(waiting)])]
      .sort((a, b) => Math.max(finished[b] ?? 0, waiting[b] ?? 0) - Math.max(finished[a] ?? 0, waiting[a] ?? 0))
      .slice(0, top)
      .map((kind) => [side, `\`${kind}\``, fmt(finished[kind] ?? 0), fmt(waiting[kind] ?? 0)]);
  return {
    title: 'Redis memory per task by key (MEMORY USAGE deltas, bytes)',
    columns: ['side', 'key (prefix removed)', 'finished', 'waiting'],
    align: ['left', 'left', 'right', 'right'],
    rows: [...rows('ours', oursFinished, oursWaiting), ...rows('raw BullMQ', rawFinished, rawWaiting)],
  };
}

function readsTable(results: BenchResults): Table {
  const reads = results.reads as NonNullable<BenchResults['reads']>;
  const label = (n: number) => (n >= 1000 && n % 1000 === 0 ? `${fmt(n / 1000)}k` : fmt(n));
  const rows = (
    [
      ['tasks/get (ms)', 'get'],
      [`tasks/list, first page of ${reads.pageSize} (ms)`, 'listFirst'],
      [`tasks/list, a page in the middle (ms)`, 'listMiddle'],
    ] as const
  ).map(([name, key]) => {
    const small = medianOf(reads.atSmall, (s) => s[key]);
    const large = medianOf(reads.atLarge, (s) => s[key]);
    const growth = ratio(large, small);
    return [
      name,
      fmt(small, 2),
      fmt(large, 2),
      fmtRatio(growth),
      verdict(
        '<= 1.5x',
        met(growth, (v) => v <= 1.5),
      ),
    ];
  });
  return {
    title: `Reads with ${label(reads.small)} and ${label(reads.large)} tasks stored (one owner; sequential requests, p50)`,
    columns: ['request', `${label(reads.small)} tasks`, `${label(reads.large)} tasks`, 'ratio', 'goal'],
    align: ['left', 'right', 'right', 'right', 'left'],
    rows,
    notes: [
      `Storing ${label(reads.large)} finished tasks through TaskStore.create took ${fmt(reads.seedSeconds, 1)} s.`,
    ],
  };
}

/** The goal of the expiry workload: a sweep rate, and nothing of the tasks left behind in any repetition. */
export const EXPIRY_GOAL = '>= 2,000 tasks/s, keyspace back to baseline';

function expiryTable(expiry: NonNullable<BenchResults['expiry']>): Table {
  const rate = medianOf(expiry.samples, (s) => s.tasksPerSecond);
  const clean = expiry.samples.filter((sample) => Object.keys(sample.leftovers).length === 0).length;
  const leftovers = expiry.samples.flatMap((sample, i) =>
    Object.entries(sample.leftovers).map(([name, count]) => `#${i + 1} ${name} ${count >= 0 ? '+' : ''}${count}`),
  );
  return {
    title: `Expiry: ${fmt(expiry.tasks)} finished tasks expiring at once, ${expiry.workers} worker processes sweeping (medians of ${expiry.samples.length} repetitions)`,
    columns: ['measure', 'value', 'goal'],
    align: ['left', 'right', 'left'],
    rows: [
      [
        'expired tasks swept per second, first claim to last delete',
        fmt(rate),
        verdict(
          EXPIRY_GOAL,
          met(rate, (v) => v >= 2000 && clean === expiry.samples.length),
        ),
      ],
      [
        `seconds from the expiry to the last delete (a pass starts every ${fmt(expiry.intervalMs / 1000, 1)} s)`,
        fmt(
          medianOf(expiry.samples, (s) => s.secondsFromExpiry),
          2,
        ),
        '',
      ],
      ['repetitions with the keyspace back to baseline', `${clean}/${expiry.samples.length}`, ''],
    ],
    notes: [
      "Baseline: task records, the expiries, all-tasks and live sets, and the owners' indexes and sessions' " +
        'event entries, as before the tasks were stored.' +
        (leftovers.length > 0 ? ` Left over: ${leftovers.join(', ')}.` : ''),
    ],
  };
}

function scaleOutTable(results: BenchResults): Table {
  const scale = results.scaleout as NonNullable<BenchResults['scaleout']>;
  const base = scale.points[0];
  const baseOurs = base ? median(base.ours) : Number.NaN;
  const rows = scale.points.map((point) => {
    const ours = median(point.ours);
    const raw = median(point.raw);
    return [
      String(point.workers),
      fmt(ours, 1),
      fmt(raw, 1),
      fmtRatio(ratio(ours, raw)),
      fmtRatio(ratio(ours, baseOurs)),
    ];
  });
  return {
    title: `Scale-out: count_primes below ${fmt(scale.primesBelow)}, ${scale.tasks} tasks per measurement (tasks/s)`,
    columns: ['worker processes', 'ours', 'raw BullMQ', 'ours/raw', `ours vs ${base?.workers ?? 1}`],
    rows,
    notes: [`This machine has ${results.machine.cores} cores: past that, more processes only share them.`],
  };
}

function sizingTable(throughput: Sides<ThroughputSample>): Table {
  const row = (name: string, samples: ThroughputSample[], pick: (s: ThroughputSample) => number) => {
    const ms = medianOf(samples, pick);
    return [name, fmt(ms, 3), fmt(ratio(1000, ms))];
  };
  return {
    title: 'CPU per no-op task, from the throughput runs (for sizing)',
    columns: ['process', 'CPU ms per task', 'tasks/s per core'],
    rows: [
      row('our api', throughput.ours, (s) => s.cpu.api),
      row('our worker', throughput.ours, (s) => s.cpu.worker),
      row('Redis, serving ours', throughput.ours, (s) => s.cpu.redis),
      row('bench HTTP clients', throughput.ours, (s) => s.cpu.client),
      row('raw BullMQ worker', throughput.raw, (s) => s.cpu.worker),
      row('Redis, serving raw BullMQ', throughput.raw, (s) => s.cpu.redis),
      row('raw BullMQ producer', throughput.raw, (s) => s.cpu.client),
    ],
  };
}

/** The commands that make up the per-task count, most frequent first (sums over all repetitions). */
function commandsTable(throughput: Sides<ThroughputSample>, top = 14): Table {
  const perTask = (samples: ThroughputSample[]) => {
    const tasks = samples.reduce((total, s) => total + s.tasks, 0);
    const totals = new Map<string, number>();
    for (const sample of samples) {
      for (const [name, calls] of Object.entries(sample.commands)) totals.set(name, (totals.get(name) ?? 0) + calls);
    }
    return new Map([...totals].map(([name, calls]) => [name, calls / tasks]));
  };
  const ours = perTask(throughput.ours);
  const raw = perTask(throughput.raw);
  const names = [...new Set([...ours.keys(), ...raw.keys()])]
    .sort((a, b) => Math.max(ours.get(b) ?? 0, raw.get(b) ?? 0) - Math.max(ours.get(a) ?? 0, raw.get(a) ?? 0))
    .slice(0, top);
  return {
    title: 'Redis commands per task, by command (commands run inside Lua scripts included)',
    columns: ['command', 'ours', 'raw BullMQ'],
    rows: names.map((name) => [name, fmt(ours.get(name) ?? 0, 2), fmt(raw.get(name) ?? 0, 2)]),
  };
}

/** The whole printout: a machine line, then every table. */
export function renderReport(results: BenchResults): string {
  const { machine } = results;
  const header =
    `## mcp-task-runner bench: ${machine.cores} cores (${machine.cpu}), ${machine.platform}, Node ${machine.node}, ` +
    `Redis ${machine.redis}, BullMQ ${machine.bullmq}; ${results.options['quick'] ? 'quick' : 'full'} run, ` +
    `${fmt(results.durationSeconds)} s`;
  const parts = [header, ...buildTables(results).map(renderTable)];
  if (results.truncated.length > 0) {
    parts.push(`Cut short by --timeout-seconds (figures count what finished): ${results.truncated.join(', ')}`);
  }
  return `${parts.join('\n\n')}\n`;
}
