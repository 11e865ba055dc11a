// `pnpm bench` end to end at toy sizes, so that the script does not rot: it starts its own redis-server, api,
// workers and raw BullMQ workers, runs every workload, prints its tables and writes its JSON.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { BenchResults } from '../../scripts/bench/results.ts';
import { repoRoot } from '../support/processes.ts';
import { track } from '../support/resources.ts';

describe('scripts/bench', function () {
  this.timeout(240_000);

  it('runs every workload at toy sizes and prints its tables', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpt-bench-test-'));
    const json = join(dir, 'results.json');
    const args = [
      '--import',
      'tsx',
      'scripts/bench/main.ts',
      ...['--reps', '1', '--clients', '4', '--tasks', '40', '--latency-samples', '10', '--reads', '5'],
      ...[
        '--small',
        '20',
        '--large',
        '200',
        '--footprint',
        '20',
        '--expiry',
        '300',
        '--workers',
        '1,2',
        '--replicas',
        '1x1,2x1',
      ],
      ...['--primes-below', '20000', '--primes-tasks', '4', '--timeout-seconds', '60', '--json', json],
    ];
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      // The workers sweep the expired tasks at their next maintenance pass: every 200 ms here, not 5 s. What is
      // checked is that the expiry workload runs and reports, not the default interval.
      env: { ...process.env, MAINTENANCE_INTERVAL_MS: '200' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const release = track(`bench (pid ${child.pid})`, () => {
      child.kill('SIGKILL');
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code, `bench failed:\n${stderr}`).to.equal(0);
      for (const title of [
        'Ours vs raw BullMQ',
        'Reads with 20 and 200 tasks',
        'Expiry: 300 finished tasks expiring at once',
        'Scale-out',
        'CPU per no-op task',
        'Ours beside the alternatives',
        'Redis commands / round trips per task by step',
        'Scale-out of no-op tasks: api replicas and worker processes',
        'Gateway: server-everything',
      ]) {
        expect(stdout).to.include(title);
      }
      // Progress went to stderr, one line per phase when not in a terminal.
      expect(stderr).to.match(/\[bench +\d+ s\] throughput 1\/1: ours/);
      const results = JSON.parse(readFileSync(json, 'utf8')) as BenchResults;
      expect(results.machine.cores).to.be.above(0);
      expect(results.throughput?.ours[0]?.tasks).to.equal(40);
      expect(results.throughput?.raw[0]?.commandsPerTask).to.be.above(0);
      expect(results.latency?.ours[0]?.samples).to.equal(10);
      expect(results.plain?.ours[0]?.samples).to.equal(10);
      expect(results.plain?.bare?.[0]?.p50).to.be.above(0);
      expect(results.throughput?.bare?.[0]?.cpu.worker).to.be.above(0);
      expect(stdout).to.include('CPU per task: api + workers');
      expect(results.reads?.atLarge).to.have.length(1);
      expect(results.footprint?.finished.oursRecord).to.be.above(0);
      expect(results.expiry?.samples).to.have.length(1);
      expect(results.expiry?.intervalMs, 'the interval the workers ran with').to.equal(200);
      expect(results.expiry?.samples[0]?.tasksPerSecond).to.be.above(0);
      expect(results.expiry?.samples[0]?.leftovers, 'keyspace back to baseline').to.deep.equal({});
      expect(stdout).to.include('>= 2,000 tasks/s, keyspace back to baseline');
      expect(results.scaleout?.points.map((point) => point.workers)).to.deep.equal([1, 2]);
      expect(results.throughput?.bare?.[0]?.tasks).to.equal(40);
      expect(results.throughput?.sdk?.[0]?.tasks).to.equal(40);
      expect(results.steps?.ours.steps['tools/call']?.commands).to.be.above(0);
      expect(results.steps?.ours.steps['plain call: tools/call']?.roundTrips).to.be.above(0);
      expect(results.replicas?.points.map((point) => [point.apis, point.workers])).to.deep.equal([
        [1, 1],
        [2, 1],
      ]);
      expect(results.gateway?.stdio.direct.p50).to.have.length(1);
      expect(results.gateway?.stdio.gateway.p50[0]).to.be.above(0);
      expect(results.gateway?.worker.children, 'one child per stdio upstream').to.equal(3);
      expect(results.truncated).to.deep.equal([]);
    } finally {
      await release();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops its redis-server, api and workers when an error nothing catches ends it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcpt-bench-crash-'));
    const pidsFile = join(dir, 'children.json');
    const args = [
      '--import',
      'tsx',
      '--import',
      './test/fixtures/bench/crash-once-started.mjs',
      'scripts/bench/main.ts',
      ...['--only', 'throughput', '--reps', '1', '--tasks', '40', '--clients', '2'],
    ];
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: { ...process.env, BENCH_CRASH_PIDS_FILE: pidsFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    /** The bench's children as the fixture saw them just before it threw, those still running. */
    const running = (): number[] => {
      let pids: number[] = [];
      try {
        pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
      } catch {
        return [];
      }
      return pids.filter((pid) => existsSync(`/proc/${pid}`));
    };
    const release = track(`crashing bench (pid ${child.pid})`, () => {
      for (const pid of [child.pid, ...running()]) {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(stderr).to.include('an error nothing catches (test fixture)');
      expect(code).to.equal(1);
      expect(JSON.parse(readFileSync(pidsFile, 'utf8'))).to.have.length.of.at.least(5);
      const left = running().map((pid) => {
        try {
          return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`;
        } catch {
          return `${pid} (gone since)`;
        }
      });
      expect(left, 'processes the bench left running').to.deep.equal([]);
    } finally {
      await release();
    }
  });
});
