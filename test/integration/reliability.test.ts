// Reliability (docs/reliability.md): one rig of real processes — 2 api replicas, 3 workers, a
// redis-server with AOF — broken on purpose, scenario after scenario, each ending by checking every task it created.
// The scenarios run in order on the same rig: the destructive ones (killing replicas and workers) come last.
// Long variants: `pnpm reliability` (scripts/reliability.ts).
import { expect } from 'chai';
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
} from '../support/reliability.ts';

const SEED = Number(process.env['RELIABILITY_SEED'] ?? 20251125);

function expectClean(report: ScenarioReport): void {
  expect(report.failures, report.failures.join('\n')).to.deep.equal([]);
  expect(report.verified, `${report.scenario}: verified of created`).to.equal(report.created);
  expect(report.created).to.be.above(0);
}

describe('reliability: crash, restart, flood and fuzz (2 api replicas, 3 workers, Redis with AOF)', function () {
  this.timeout(120_000);
  let rig: Rig;

  before(async () => {
    rig = await startRig({ apis: 2, workers: 3 });
  });
  after(async () => {
    await rig?.stop();
  });

  it('flood, T-RSRC-1, T-SEC-3: 500 task-augmented calls from 20 clients over 2 replicas while 3 hostile addresses send 400 initialize each with 64 KB capabilities; none lost, hostile sessions about 1 KB each and within the limits, Redis back to baseline after ttl', async () => {
    const hostile = { addresses: 3, perAddress: 400, capabilityBytes: 64 * 1024 };
    expectClean(await flood(rig, { tasks: 500, clients: 20, seed: SEED, hostile }));
  });

  it('fuzz: 1500 generated malformed or hostile messages get only JSON-RPC/HTTP errors; no crash, hang or 5xx', async () => {
    expectClean(await fuzz(rig, { cases: 1500, lanes: 8, seed: SEED }));
  });

  it('T-CANCEL-1, T-CANCEL-3, T-LIFE-3: cancel racing completion has one winner; terminal statuses never change', async () => {
    expectClean(await cancelRaces(rig, { iterations: 40, lanes: 4, seed: SEED }));
  });

  it('T-TTL-1, T-TTL-2: tasks in every status disappear on time with their results and events', async () => {
    expectClean(await ttlExpiry(rig, { perStatus: 1 }));
  });

  it('Redis SIGTERM + restart: every acknowledged task (finished, running, queued) is kept and finishes', async () => {
    expectClean(await redisRestart(rig, { signal: 'SIGTERM', queuedPerSlot: 1 }));
  });

  it('Redis SIGKILL + restart (AOF everysec): every task acknowledged more than 2 s before the kill finishes', async () => {
    expectClean(await redisRestart(rig, { signal: 'SIGKILL', queuedPerSlot: 1 }));
  });

  it('an api replica SIGKILLed under waiting tasks/result (JSON and SSE): clients get their results elsewhere', async () => {
    expectClean(await apiCrash(rig, { rounds: 1, clients: 6 }));
  });

  it('T-LIFE-3: a worker SIGKILLed mid-tool: its tasks run again elsewhere; a not retry-safe tool fails instead', async () => {
    expectClean(await workerCrash(rig, { rounds: 1, waits: 4, onces: 3 }));
  });

  it('worker SIGTERM: running tools finish within WORKER_SHUTDOWN_GRACE_MS, the rest is handed back', async () => {
    expectClean(await gracefulShutdown(rig, { short: 3, long: 3 }));
  });
});
