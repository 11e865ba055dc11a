// `pnpm bench`: our runner against raw BullMQ on the same Redis in the same run. Starts its own redis-server, api
// and workers, runs the workloads of docs/benchmarks.md and prints a table of medians and ratios (stdout) with a
// progress line (stderr). `pnpm bench --help` lists the flags.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, cpus, platform } from 'node:os';
import { OptionsError, parseOptions, USAGE, type BenchOptions } from './options.ts';
import { gatewayWorkload } from './gateway.ts';
import { Progress } from './progress.ts';
import { redisVersion } from './redis-info.ts';
import { renderReport } from './report.ts';
import type { BenchResults, Machine } from './results.ts';
import { BenchSystem } from './system.ts';
import { Workloads } from './workloads.ts';

async function main(): Promise<number> {
  let options: Readonly<BenchOptions>;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof OptionsError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  if (options.help) {
    console.log(USAGE);
    return 0;
  }
  const started = performance.now();
  const progress = new Progress();
  const system = new BenchSystem(options, progress);
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    progress.done();
    console.error('bench: interrupted, stopping processes ...');
    void system.stop().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // An error no workload catches (a client library throwing from a socket event, say) would end the bench and
  // leave its redis-server, api and workers running: they are stopped first.
  let crashed = false;
  const onCrash = (error: unknown) => {
    if (crashed) return;
    crashed = true;
    progress.done();
    console.error(failureText(error));
    void system.stop().finally(() => process.exit(1));
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  try {
    await system.start();
    const workloads = new Workloads(system);
    const results: BenchResults = {
      machine: await machine(system),
      options: { ...options },
      durationSeconds: 0,
      truncated: workloads.truncated,
    };
    const wanted = new Set(options.only);
    await workloads.warmUp();
    if (wanted.has('throughput')) results.throughput = await workloads.throughput();
    if (wanted.has('latency')) {
      results.latency = await workloads.latency();
      results.plain = await workloads.plainCalls();
    }
    if (wanted.has('steps')) results.steps = await workloads.steps();
    // Footprint before reads: its key-by-key accounting need not scan the tasks the reads workload stores.
    if (wanted.has('footprint')) results.footprint = await workloads.footprint();
    if (wanted.has('expiry')) results.expiry = await workloads.expiry();
    if (wanted.has('reads')) results.reads = await workloads.reads();
    if (wanted.has('scaleout')) results.scaleout = await workloads.scaleOut();
    if (wanted.has('replicas')) results.replicas = await workloads.replicas();
    if (wanted.has('gateway')) results.gateway = await gatewayWorkload(system);
    progress.phase('stopping processes');
    await system.stop();
    results.durationSeconds = (performance.now() - started) / 1000;
    progress.done();
    process.stdout.write(renderReport(results));
    if (options.json) writeFileSync(options.json, `${JSON.stringify(results, null, 2)}\n`);
    return 0;
  } catch (error) {
    progress.done();
    // After a signal or a crash, a workload failing because its processes are being stopped is no news.
    if (!interrupted && !crashed) {
      console.error(failureText(error));
      console.error(system.logTails());
    }
    await system.stop();
    return 1;
  }
}

function failureText(error: unknown): string {
  return `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
}

async function machine(system: BenchSystem): Promise<Machine> {
  const require = createRequire(import.meta.url);
  const bullmq = (require('bullmq/package.json') as { version: string }).version;
  const cpuList = cpus();
  return {
    cores: cpuList.length,
    cpu: cpuList[0]?.model.trim() ?? 'unknown CPU',
    node: process.version,
    redis: await redisVersion(system.redis),
    bullmq,
    platform: `${platform()} ${arch()}`,
  };
}

process.exitCode = await main();
