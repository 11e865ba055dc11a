// `pnpm reliability`: the long variants of the reliability scenarios (test/support/reliability.ts) on their own
// rig — redis-server with AOF, 2 api replicas, 3 workers — and a summary table. `--quick` runs the CI sizes,
// `--only a,b` some scenarios, `--seed N` replays the generated flood/fuzz/cancel cases. Exit code 1 on a failure.
import {
  apiCrash,
  cancelRaces,
  flood,
  fuzz,
  gracefulShutdown,
  redisRestart,
  startRig,
  ttlExpiry,
  workerCrash,
  type Rig,
  type ScenarioReport,
} from '../test/support/reliability.ts';
import { releaseLeftovers } from '../test/support/resources.ts';
import { stopSharedRedis } from '../test/support/redis-server.ts';

const USAGE = `usage: pnpm reliability [--quick] [--only name,...] [--seed N]
scenarios, in this order: flood fuzz cancel ttl redis-term redis-kill api-kill worker-kill worker-term`;

interface Scenario {
  name: string;
  run(rig: Rig, quick: boolean, seed: number): Promise<ScenarioReport>;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'flood',
    run: (rig, quick, seed) =>
      flood(
        rig,
        quick
          ? { tasks: 500, clients: 20, seed, hostile: { addresses: 3, perAddress: 400, capabilityBytes: 64 * 1024 } }
          : {
              tasks: 5000,
              clients: 50,
              seed,
              hostile: { addresses: 10, perAddress: 1500, capabilityBytes: 32 * 1024 },
            },
      ),
  },
  {
    name: 'fuzz',
    run: (rig, quick, seed) => fuzz(rig, { cases: quick ? 1500 : 20_000, lanes: 8, seed }),
  },
  {
    name: 'cancel',
    run: (rig, quick, seed) => cancelRaces(rig, { iterations: quick ? 40 : 1000, lanes: quick ? 4 : 10, seed }),
  },
  { name: 'ttl', run: (rig, quick) => ttlExpiry(rig, { perStatus: quick ? 1 : 10 }) },
  { name: 'redis-term', run: (rig, quick) => redisRestart(rig, { signal: 'SIGTERM', queuedPerSlot: quick ? 1 : 10 }) },
  { name: 'redis-kill', run: (rig, quick) => redisRestart(rig, { signal: 'SIGKILL', queuedPerSlot: quick ? 1 : 10 }) },
  {
    name: 'api-kill',
    run: (rig, quick) => apiCrash(rig, quick ? { rounds: 1, clients: 6 } : { rounds: 5, clients: 20 }),
  },
  {
    name: 'worker-kill',
    run: (rig, quick) =>
      workerCrash(rig, quick ? { rounds: 1, waits: 4, onces: 3 } : { rounds: 5, waits: 6, onces: 4 }),
  },
  { name: 'worker-term', run: (rig, quick) => gracefulShutdown(rig, { short: 3, long: quick ? 3 : 6 }) },
];

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('--help')) {
    console.log(USAGE);
    return 0;
  }
  const quick = args.includes('--quick');
  const seedAt = args.indexOf('--seed');
  const seed = seedAt >= 0 ? Number(args[seedAt + 1]) : Date.now() % 1_000_000;
  const onlyAt = args.indexOf('--only');
  const only = onlyAt >= 0 ? String(args[onlyAt + 1]).split(',') : undefined;
  const unknown = only?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? [];
  if (!Number.isInteger(seed) || unknown.length > 0) {
    console.error(unknown.length > 0 ? `unknown scenario(s): ${unknown.join(', ')}\n${USAGE}` : USAGE);
    return 2;
  }
  console.error(`reliability: ${quick ? 'CI' : 'long'} sizes, seed ${seed}; starting the rig ...`);
  const rig = await startRig({ apis: 2, workers: 3 });
  const reports: ScenarioReport[] = [];
  try {
    for (const scenario of SCENARIOS) {
      if (only && !only.includes(scenario.name)) continue;
      console.error(`reliability: ${scenario.name} ...`);
      try {
        reports.push(await scenario.run(rig, quick, seed));
      } catch (error) {
        reports.push({
          scenario: scenario.name,
          created: 0,
          verified: 0,
          failures: [String(error)],
          seconds: 0,
          figures: {},
        });
      }
      const last = reports[reports.length - 1] as ScenarioReport;
      console.error(`  ${last.failures.length === 0 ? 'ok' : 'FAILED'} in ${last.seconds} s`);
    }
  } finally {
    await rig.stop();
    await stopSharedRedis();
    await releaseLeftovers();
  }
  printTable(reports, seed);
  return reports.every((report) => report.failures.length === 0) ? 0 : 1;
}

function printTable(reports: readonly ScenarioReport[], seed: number): void {
  const rows = reports.map((r) => [
    r.scenario,
    String(r.created),
    String(r.verified),
    String(r.failures.length),
    `${r.seconds} s`,
  ]);
  const header = ['scenario', 'created', 'verified', 'failures', 'time'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  console.log(`\nreliability (seed ${seed})\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  for (const report of reports) {
    const figures = Object.entries(report.figures);
    if (figures.length > 0) console.log(`\n${report.scenario}: ${figures.map(([k, v]) => `${k} ${v}`).join('; ')}`);
    for (const failure of report.failures) console.log(`  FAIL ${failure}`);
  }
}

process.exitCode = await main();
