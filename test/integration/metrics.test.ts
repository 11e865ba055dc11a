// Prometheus metrics of the api (/metrics) and of a worker (WORKER_METRICS_PORT): scraped before and after real
// tasks, the counters each process owns move, and the cluster-wide gauges read Redis.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { KeySpace, TaskStore } from '@mcp-tasks/engine';
import type { TaskRecord } from '@mcp-tasks/protocol';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { startSystem, type System } from '../support/in-process.ts';
import { repoRoot } from '../support/processes.ts';
import { rawRequest } from '../support/raw-http.ts';
import { scrape } from '../support/prometheus.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';
import { commandCalls as commandCallsOf } from '../support/command-stats.ts';

const MAX_BODY_BYTES = 8192;

describe('metrics: /metrics on the api and on a worker (api and worker in process, real Redis)', function () {
  this.timeout(30_000);
  let system: System;
  let client: McpTestClient;
  let apiMetrics: string;
  let workerMetrics: string;

  before(async () => {
    const workerPort = await freePort();
    system = await startSystem({
      // Live statuses read on every scrape: the gauges below must show a change at once.
      env: {
        WORKER_METRICS_PORT: String(workerPort),
        WORKER_SHUTDOWN_GRACE_MS: '500',
        METRICS_LIVE_REFRESH_MS: '0',
        MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      },
    });
    client = await McpTestClient.connect(system.apiUrl);
    apiMetrics = system.apiUrl.replace(/\/mcp$/, '/metrics');
    workerMetrics = `http://127.0.0.1:${workerPort}/metrics`;
  });
  after(async () => {
    await system?.stop();
  });

  it('serves the Prometheus text format with every metric documented, on both processes', async () => {
    const api = await scrape(apiMetrics);
    expect(api.contentType).to.match(/^text\/plain; version=0\.0\.4/);
    expect(api.samples.every((sample) => sample.labels['service'] === 'api')).to.equal(true);
    const worker = await scrape(workerMetrics);
    expect(worker.value('mcpt_worker_concurrency')).to.equal(16);
    expect(worker.samples.every((sample) => sample.labels['service'] === 'worker')).to.equal(true);
    const health = await fetch(workerMetrics.replace(/\/metrics$/, '/healthz'));
    expect(await health.json()).to.deep.equal({ status: 'ok' });
  });

  it('every metric is in docs/observability.md with its type, unit and labels, and follows the Prometheus naming conventions, on both processes', async () => {
    const documented = documentedMetrics();
    for (const [service, url] of [
      ['api', apiMetrics],
      ['worker', workerMetrics],
    ] as const) {
      const served = await scrape(url);
      const types = new Map(
        [...served.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [String(m[1]), String(m[2])] as const),
      );
      for (const [name, type] of types) {
        const doc = documented.get(name);
        expect(doc, `${service} serves ${name}, which docs/observability.md does not list`).to.not.equal(undefined);
        expect(doc?.type, `${name}: its type`).to.equal(type);
        expect(doc?.servedBy, `${name}: served by`).to.include(service);
        expect(name.endsWith('_total'), `${name}: a ${type} (only counters end in _total)`).to.equal(
          type === 'counter',
        );
        if (type === 'histogram') expect(name, `${name}: a histogram in base units`).to.match(/_(seconds|bytes)$/);
        expect(name, `${name}: base units`).to.not.match(/_ms(_|$)|milli/);
      }
      for (const doc of documented.values()) {
        // prom-client's process metrics differ a little between platforms and Node versions: those served are listed.
        if (!doc.servedBy.includes(service) || /^mcpt_(process|nodejs)_/.test(doc.name)) continue;
        expect(
          types.has(doc.name),
          `${service} does not serve ${doc.name}, which docs/observability.md lists`,
        ).to.equal(true);
      }
      for (const sample of served.samples) {
        const base = types.has(sample.name) ? sample.name : sample.name.replace(/_(bucket|sum|count)$/, '');
        const labels = Object.keys(sample.labels).filter((label) => label !== 'service' && label !== 'le');
        expect(documented.get(base)?.labels, `${sample.name}: labels`).to.include.members(labels);
      }
    }
    for (const doc of documented.values()) {
      const unitInName = /_seconds(_|$)/.test(doc.name)
        ? 'seconds'
        : /_bytes(_|$)/.test(doc.name)
          ? 'bytes'
          : undefined;
      if (unitInName !== undefined || ['seconds', 'bytes'].includes(doc.unit)) {
        expect(doc.unit, `${doc.name}: the unit its name says`).to.equal(unitInName);
      }
    }
  });

  it('counters move with a task: created on the api; finished, duration and queue wait on the worker', async () => {
    const [apiBefore, workerBefore] = await Promise.all([scrape(apiMetrics), scrape(workerMetrics)]);
    const task = await client.createTask('wait', { seconds: 0.2 });
    await client.call('tasks/result', { taskId: task['taskId'] });
    const [apiAfter, workerAfter] = await Promise.all([scrape(apiMetrics), scrape(workerMetrics)]);

    const created = { tool: 'wait', kind: 'task' };
    expect(apiAfter.value('mcpt_tasks_created_total', created)).to.equal(
      apiBefore.value('mcpt_tasks_created_total', created) + 1,
    );
    const done = { tool: 'wait', kind: 'task', status: 'completed' };
    expect(workerAfter.value('mcpt_tasks_finished_total', done)).to.equal(
      workerBefore.value('mcpt_tasks_finished_total', done) + 1,
    );
    // The transition happened on the worker: the api does not count it too (sums over processes stay exact).
    expect(apiAfter.value('mcpt_tasks_finished_total', done)).to.equal(0);
    const duration = { tool: 'wait', status: 'completed' };
    expect(workerAfter.value('mcpt_task_duration_seconds_count', duration)).to.equal(
      workerBefore.value('mcpt_task_duration_seconds_count', duration) + 1,
    );
    const added =
      workerAfter.value('mcpt_task_duration_seconds_sum', duration) -
      workerBefore.value('mcpt_task_duration_seconds_sum', duration);
    expect(added).to.be.within(0.2, 5);
    const wait = { tool: 'wait' };
    expect(workerAfter.value('mcpt_task_queue_wait_seconds_count', wait)).to.equal(
      workerBefore.value('mcpt_task_queue_wait_seconds_count', wait) + 1,
    );
    expect(workerAfter.value('mcpt_task_queue_wait_seconds_bucket', { ...wait, le: '+Inf' })).to.equal(
      workerAfter.value('mcpt_task_queue_wait_seconds_count', wait),
    );
  });

  it('a cancel is counted by the api that made it; live gauges show working and input_required tasks', async () => {
    const task = await client.createTask('wait', { seconds: 30 });
    const taskId = String(task['taskId']);
    await eventually(async () => {
      const current = await client.call('tasks/get', { taskId });
      return String(current['statusMessage']).startsWith('Running') ? true : undefined;
    });
    const running = await scrape(apiMetrics);
    expect(running.value('mcpt_queue_jobs', { state: 'active' })).to.equal(1);
    expect(running.value('mcpt_workers')).to.equal(1);
    expect(running.value('mcpt_tasks_live', { status: 'working' })).to.equal(1);
    expect(running.value('mcpt_tasks_live_all')).to.equal(1);
    expect((await scrape(workerMetrics)).value('mcpt_worker_running_tasks')).to.equal(1);

    const store = new TaskStore(system.redis, new KeySpace(system.prefix));
    await store.transition(
      { taskId, sessionId: String(client.sessionId), owner: `session:${String(client.sessionId)}` },
      'input_required',
    );
    const waiting = await scrape(apiMetrics);
    expect(waiting.value('mcpt_tasks_live', { status: 'input_required' })).to.equal(1);
    expect(waiting.value('mcpt_tasks_live', { status: 'working' })).to.equal(0);

    const cancelled = { tool: 'wait', kind: 'task', status: 'cancelled' };
    const before = waiting.value('mcpt_tasks_finished_total', cancelled);
    await client.call('tasks/cancel', { taskId });
    const after = await eventually(async () => {
      const now = await scrape(apiMetrics);
      return now.value('mcpt_tasks_finished_total', cancelled) === before + 1 ? now : undefined;
    }, 2000);
    expect(after.value('mcpt_task_duration_seconds_count', { tool: 'wait', status: 'cancelled' })).to.equal(1);
    expect(after.value('mcpt_tasks_live_all')).to.equal(0);
  });

  it('rejected requests are counted by reason', async () => {
    const before = await scrape(apiMetrics);
    await rawRequest(system.apiUrl, { headers: { 'content-type': 'text/plain' }, body: '{}' });
    await rawRequest(system.apiUrl, {
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: '{not json',
    });
    await client.rpc('no/such/method');
    await client.rpc('tasks/get', { taskId: 'nope' });
    const after = await scrape(apiMetrics);
    for (const reason of ['unsupported_media_type', 'parse_error', 'method_not_found', 'invalid_params']) {
      expect(after.value('mcpt_requests_rejected_total', { reason }), reason).to.equal(
        before.value('mcpt_requests_rejected_total', { reason }) + 1,
      );
    }
  });

  it('refusals are counted once each, on POST /mcp (served ahead of express) as through express (/mcp/, PUT)', async () => {
    const json = { 'content-type': 'application/json', accept: 'application/json' };
    const url = system.apiUrl;
    const before = await scrape(apiMetrics);
    const answers = [
      await rawRequest(url, { headers: { 'content-type': 'text/plain' }, body: '{}' }),
      await rawRequest(`${url}/`, { headers: { 'content-type': 'text/plain' }, body: '{}' }),
      await rawRequest(url, { headers: json, body: `{"pad":"${'x'.repeat(MAX_BODY_BYTES)}"}` }),
      await rawRequest(`${url}/`, { headers: json, body: `{"pad":"${'x'.repeat(MAX_BODY_BYTES)}"}` }),
      await rawRequest(url, { headers: json, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }),
      await rawRequest(url, { method: 'PUT', headers: json, body: '{}' }),
    ];
    expect(answers.map((answer) => answer.status)).to.deep.equal([415, 415, 413, 413, 400, 405]);
    const after = await scrape(apiMetrics);
    const counted = { unsupported_media_type: 2, payload_too_large: 2, invalid_request: 1, method_not_allowed: 1 };
    for (const [reason, count] of Object.entries(counted)) {
      expect(after.value('mcpt_requests_rejected_total', { reason }), reason).to.equal(
        before.value('mcpt_requests_rejected_total', { reason }) + count,
      );
    }
  });

  it('has no admin dashboard when ADMIN_TOKEN is unset', async () => {
    const response = await fetch(system.apiUrl.replace(/\/mcp$/, '/admin'));
    expect(response.status).to.equal(404);
  });
});

describe('metrics: METRICS_TOKEN on the api and on a worker (in process)', function () {
  this.timeout(30_000);
  const TOKEN = `metrics-${randomUUID()}`;
  let system: System;
  let apiMetrics: string;
  let workerMetrics: string;

  before(async () => {
    const workerPort = await freePort();
    system = await startSystem({
      env: { METRICS_TOKEN: TOKEN, WORKER_METRICS_PORT: String(workerPort), WORKER_SHUTDOWN_GRACE_MS: '500' },
    });
    apiMetrics = system.apiUrl.replace(/\/mcp$/, '/metrics');
    workerMetrics = `http://127.0.0.1:${workerPort}/metrics`;
  });
  after(async () => {
    await system?.stop();
  });

  it('/metrics needs Authorization: Bearer <METRICS_TOKEN> on both processes; health probes stay open', async () => {
    for (const url of [apiMetrics, workerMetrics]) {
      const wrong: Record<string, string>[] = [
        {},
        { authorization: `Bearer ${TOKEN}x` },
        { authorization: `Basic ${TOKEN}` },
      ];
      for (const headers of wrong) {
        const refused = await fetch(url, { headers });
        expect(refused.status, `${url} ${JSON.stringify(headers)}`).to.equal(401);
        expect(refused.headers.get('www-authenticate')).to.equal('Bearer realm="mcp-task-runner metrics"');
        expect(await refused.text()).to.not.match(/mcpt_/);
      }
      const served = await scrape(url, { authorization: `Bearer ${TOKEN}` });
      expect(served.text).to.match(/^# HELP mcpt_tasks_finished_total /m);
      const health = await fetch(url.replace(/\/metrics$/, '/healthz'));
      expect(health.status).to.equal(200);
    }
    expect((await fetch(apiMetrics.replace(/\/metrics$/, '/readyz'))).status).to.equal(200);
  });
});

describe('metrics: the cost of a scrape does not grow with the tasks in Redis (own redis-server, INFO commandstats)', function () {
  this.timeout(60_000);
  const TASKS = 2500;
  let redis: RedisServer;
  let system: System;
  let inspect: Redis;
  let releaseInspect: (() => Promise<void>) | undefined;
  let store: TaskStore;
  let apiMetrics: string;
  const ids: string[] = [];

  /** Commands Redis ran since the last CONFIG RESETSTAT, by name (those inside scripts included). */
  const commandCalls = () => commandCallsOf(inspect);
  const total = (calls: Record<string, number>) => Object.values(calls).reduce((sum, n) => sum + n, 0);

  before(async () => {
    redis = await startRedisServer();
    // No worker: nothing else talks to this Redis while scrapes are counted.
    system = await startSystem({ redisUrl: redis.url, workers: 0, env: { METRICS_LIVE_REFRESH_MS: '5000' } });
    system.redis.on('error', () => undefined);
    inspect = new Redis(redis.url, { maxRetriesPerRequest: null });
    releaseInspect = track('commandstats redis', () => inspect.disconnect());
    apiMetrics = system.apiUrl.replace(/\/mcp$/, '/metrics');
    store = new TaskStore(inspect, new KeySpace(system.prefix));
    const now = Date.now();
    for (let i = 0; i < TASKS; i += 250) {
      await Promise.all(
        Array.from({ length: 250 }, () => {
          const record: TaskRecord = {
            taskId: randomUUID(),
            kind: 'task',
            status: 'working',
            createdAt: now,
            lastUpdatedAt: now,
            ttl: 600_000,
            pollInterval: 1000,
            owner: 'session:metrics-cost',
            sessionId: 'metrics-cost',
            tool: 'wait',
          };
          ids.push(record.taskId);
          return store.create({ record, arguments: {} });
        }),
      );
    }
  });
  after(async () => {
    await releaseInspect?.();
    await system?.stop();
    await redis?.stop();
  });

  it('with 2,500 live tasks, ten scrapes run a bounded number of Redis commands and read no record', async () => {
    // The first scrape of a process waits for one pass over the live records (the status breakdown).
    const first = await scrape(apiMetrics);
    expect(first.value('mcpt_tasks_live_all')).to.equal(TASKS);
    expect(first.value('mcpt_tasks_live', { status: 'working' })).to.equal(TASKS);
    await inspect.config('RESETSTAT');
    for (let i = 0; i < 10; i++) {
      const now = await scrape(apiMetrics);
      expect(now.value('mcpt_tasks_live_all')).to.equal(TASKS);
    }
    const calls = await commandCalls();
    // Per scrape: the live-set size, BullMQ's job counts (one script of ZCARDs and LLENs), its worker list, the
    // security-counters hash, the webhook counters and the size of the set of tasks with deliveries left, per tool queue its scheduling (counts, meta, a bounded sample of waiting jobs) and the
    // scheduling counters, about a dozen commands whatever the number of tasks; a pass over the records would
    // be 2,500 reads of task hashes.
    expect(total(calls), JSON.stringify(calls)).to.be.at.most(10 * 20);
    expect(calls['hget'] ?? 0, 'task status reads').to.equal(0);
    // The webhook counters' hash (issue 40), once per scrape; 2,500 record reads would show here too.
    expect(calls['hmget'] ?? 0, 'the webhook counters, once per scrape').to.be.at.most(10);
    expect(calls['hgetall'] ?? 0, 'the security and the scheduling counters, once each per scrape').to.be.at.most(20);
  });

  it('the status breakdown is read again at most once per METRICS_LIVE_REFRESH_MS, and then shows changes', async () => {
    await store.transition(
      { taskId: ids[0] as string, sessionId: 'metrics-cost', owner: 'session:metrics-cost' },
      'input_required',
    );
    await inspect.config('RESETSTAT');
    const started = Date.now();
    const seen = await eventually(
      async () => {
        const now = await scrape(apiMetrics);
        return now.value('mcpt_tasks_live', { status: 'input_required' }) === 1 ? now : undefined;
      },
      15_000,
      100,
    );
    expect(seen.value('mcpt_tasks_live', { status: 'working' })).to.equal(TASKS - 1);
    const elapsed = Date.now() - started;
    // Scraped every 100 ms for `elapsed`: passes of 2,500 reads each, at most one per 5 s window (plus one).
    const passes = (await commandCalls())['hget'] ?? 0;
    expect(passes / TASKS).to.be.at.most(Math.ceil(elapsed / 5000) + 1);
  });
});

interface DocumentedMetric {
  name: string;
  type: string;
  unit: string;
  labels: string[];
  servedBy: string[];
}

/** The metrics tables of docs/observability.md ("Metrics", up to "Renamed in this release"), by name. */
function documentedMetrics(): Map<string, DocumentedMetric> {
  const text = readFileSync(join(repoRoot, 'docs', 'observability.md'), 'utf8');
  const start = text.indexOf('\n## Metrics\n');
  const section = text.slice(start, text.indexOf('\n### Renamed in this release\n', start));
  const metrics = new Map<string, DocumentedMetric>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `mcpt_')) continue;
    const [name, type, unit, labels, servedBy] = line
      .split('|')
      .slice(1, 6)
      .map((cell) => cell.trim());
    const names = (cell: string | undefined) =>
      [...(cell ?? '').matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1] as string);
    const metric = String(names(name)[0]);
    expect(metrics.has(metric), `${metric} is listed twice`).to.equal(false);
    metrics.set(metric, {
      name: metric,
      type: String(type),
      unit: String(unit),
      labels: names(labels),
      servedBy: String(servedBy).split(/,\s*/),
    });
  }
  expect(metrics.size, 'metrics listed in docs/observability.md').to.be.at.least(20);
  return metrics;
}
