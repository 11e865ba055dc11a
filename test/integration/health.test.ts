// Health endpoints of the api: liveness while the api runs, readiness only while its Redis answers. The api
// gets a redis-server of its own here, which the test freezes (SIGSTOP), thaws and finally stops; /metrics keeps
// answering through the outage.
import { expect } from 'chai';
import { eventually } from '../support/mcp-client.ts';
import { scrape } from '../support/prometheus.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

interface Probe {
  status: number;
  body: Record<string, unknown>;
  ms: number;
}

describe('health: /healthz and /readyz (an api in process, its own redis-server)', function () {
  this.timeout(30_000);
  let redis: RedisServer;
  let system: System;
  let base: string;

  async function probe(path: string): Promise<Probe> {
    const started = Date.now();
    const response = await fetch(base + path, { signal: AbortSignal.timeout(5000) });
    return {
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
      ms: Date.now() - started,
    };
  }

  before(async () => {
    redis = await startRedisServer();
    system = await startSystem({ redisUrl: redis.url, workers: 0 });
    system.redis.on('error', () => undefined); // the test's own connection sees the outage too
    base = system.apiUrl.replace(/\/mcp$/, '');
  });
  after(async () => {
    redis?.process?.kill('SIGCONT');
    await system?.stop();
    await redis?.stop();
  });

  it('both answer 200 while Redis answers', async () => {
    expect(await probe('/healthz')).to.deep.include({ status: 200, body: { status: 'ok' } });
    expect(await probe('/readyz')).to.deep.include({ status: 200, body: { status: 'ready' } });
  });

  it('readiness fails within about a second when Redis stops answering, and recovers when it answers again', async () => {
    redis.process?.kill('SIGSTOP');
    try {
      const frozen = await probe('/readyz');
      expect(frozen.status).to.equal(503);
      expect(frozen.body).to.deep.equal({ status: 'unavailable', reason: 'redis: no answer to PING within 1000 ms' });
      expect(frozen.ms).to.be.below(2500);
      expect((await probe('/healthz')).status).to.equal(200);
    } finally {
      redis.process?.kill('SIGCONT');
    }
    await eventually(async () => ((await probe('/readyz')).status === 200 ? true : undefined), 5000, 100);
  });

  it('readiness fails at once when Redis is unreachable; liveness still answers', async () => {
    await redis.stop();
    const down = await eventually(async () => {
      const ready = await probe('/readyz');
      return ready.status === 503 ? ready : undefined;
    }, 5000);
    expect(down.body['status']).to.equal('unavailable');
    expect(String(down.body['reason'])).to.match(/^redis: /);
    const again = await probe('/readyz');
    expect(again.status).to.equal(503);
    expect(again.ms).to.be.below(1500);
    expect(await probe('/healthz')).to.deep.include({ status: 200, body: { status: 'ok' } });
    // Metrics still answer, with the process's own series and without the gauges that need Redis.
    const metrics = await scrape(`${base}/metrics`);
    expect(metrics.samples.some((sample) => sample.name === 'mcpt_process_cpu_user_seconds_total')).to.equal(true);
    expect(metrics.samples.some((sample) => sample.name === 'mcpt_queue_jobs')).to.equal(false);
    expect(metrics.value('mcpt_workers')).to.be.NaN;
  });
});
