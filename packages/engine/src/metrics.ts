// Prometheus metrics, one registry per process. Counters are counted where the event happens: a task's creation
// by the api replica that created it, its terminal transition by the one process whose transition won (the
// worker that settled it, the api that cancelled it, the worker whose maintenance reconciled it). Summing over
// every scraped process therefore counts each task once. Queue depth, workers and live tasks are read from Redis
// at scrape time with a fixed number of commands whatever the number of tasks (counts and set sizes, no record
// reads): every api replica reports the same cluster-wide value (aggregate them with max()).
import { createHash, timingSafeEqual } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration } from 'prom-client';
import { TASK_STATUSES, TaskStatus, type CatalogEntry } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import type { ToolJobData } from './queue.ts';
import type { QueueDepth, TaskAdmin } from './task-admin.ts';
import type { TaskObserver } from './records/store.ts';
import type { ToolSchedulingView } from './tool-limits.ts';
import { collectFromRedis, METRICS_PREFIX } from './metrics-collect.ts';

/** Waiting jobs a scrape reads per tool to count them by principal, and how many principals it reports per tool. */
const METRICS_QUEUED_SAMPLE = 200;
const TOP_PRINCIPALS = 10;

/** prom-client's default gauges that end in `_total`: sum(mcpt_nodejs_active_handles) etc. replace them. */
const SUMMED_DEFAULT_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 21600, 86400];
const WAIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** Why a request was refused before or instead of being served, by JSON-RPC code or HTTP status. */
export const REJECTION_REASONS: Readonly<Record<number, string>> = {
  [-32700]: 'parse_error',
  [-32600]: 'invalid_request',
  [-32601]: 'method_not_found',
  [-32602]: 'invalid_params',
  [-32029]: 'limit_exceeded',
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'unknown_session',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
};

/** The challenge of a /metrics request without the right METRICS_TOKEN (401). */
export const METRICS_CHALLENGE = 'Bearer realm="mcp-task-runner metrics"';

/**
 * Whether a /metrics request may be served: always without METRICS_TOKEN, else only with
 * `Authorization: Bearer <token>` (digests compared in constant time, so the time says nothing about the token).
 */
export function metricsAccessAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
  if (presented === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(token));
}

export class RunnerMetrics {
  readonly registry = new Registry();
  readonly tasksCreated: Counter<'tool' | 'kind'>;
  readonly tasksFinished: Counter<'tool' | 'kind' | 'status'>;
  readonly taskDuration: Histogram<'tool' | 'status'>;
  readonly queueWait: Histogram<'tool'>;
  readonly rejected: Counter<'reason'>;

  constructor(service: 'api' | 'worker', options: { processMetrics?: boolean } = {}) {
    this.registry.setDefaultLabels({ service });
    if (options.processMetrics !== false) {
      collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX });
      // Gauges named as counters (Prometheus naming: `_total` is a counter's); each is the sum of the labelled
      // gauge of the same name without the suffix, which stays.
      for (const name of SUMMED_DEFAULT_GAUGES) this.registry.removeSingleMetric(`${METRICS_PREFIX}${name}`);
    }
    const counter = <L extends string>(config: CounterConfiguration<L>) =>
      new Counter<L>({ ...config, registers: [this.registry] });
    this.tasksCreated = counter({
      name: `${METRICS_PREFIX}tasks_created_total`,
      help: 'Tasks (kind=task) and worker-run plain calls (kind=call) created by this process',
      labelNames: ['tool', 'kind'],
    });
    this.tasksFinished = counter({
      name: `${METRICS_PREFIX}tasks_finished_total`,
      help: 'Terminal transitions won by this process, by tool, kind and status',
      labelNames: ['tool', 'kind', 'status'],
    });
    this.taskDuration = new Histogram({
      name: `${METRICS_PREFIX}task_duration_seconds`,
      help: 'Time from creation to terminal status (what the client waits), for transitions won by this process',
      labelNames: ['tool', 'status'],
      buckets: DURATION_BUCKETS,
      registers: [this.registry],
    });
    this.queueWait = new Histogram({
      name: `${METRICS_PREFIX}task_queue_wait_seconds`,
      help: 'Time from creation to the first start of the job on a worker of this process',
      labelNames: ['tool'],
      buckets: WAIT_BUCKETS,
      registers: [this.registry],
    });
    this.rejected = counter({
      name: `${METRICS_PREFIX}requests_rejected_total`,
      help: 'Requests refused by this api process, by reason (HTTP-level or JSON-RPC error code)',
      labelNames: ['reason'],
    });
  }

  /** The TaskStore observer that feeds the task counters and the duration histogram. */
  taskObserver(): TaskObserver {
    return {
      created: (record) => this.tasksCreated.inc({ tool: record.tool, kind: record.kind }),
      finished: (task, status, at) => {
        this.tasksFinished.inc({ tool: task.tool, kind: task.kind, status });
        if (Number.isFinite(task.createdAt)) {
          this.taskDuration.observe({ tool: task.tool, status }, Math.max(0, at - task.createdAt) / 1000);
        }
      },
    };
  }

  /** A job started on a worker of this process (first attempt only: retries would count their first run). */
  jobStarted(job: { data: ToolJobData; timestamp: number; processedOn?: number; attemptsStarted: number }): void {
    if (job.attemptsStarted > 1) return;
    const started = job.processedOn ?? Date.now();
    this.queueWait.observe({ tool: job.data.tool }, Math.max(0, started - job.timestamp) / 1000);
  }

  /** Counts a refusal; codes and statuses that are not refusals (a tool's own error) are ignored. */
  reject(codeOrStatus: number): void {
    const reason = REJECTION_REASONS[codeOrStatus];
    if (reason) this.rejected.inc({ reason });
  }

  /**
   * Cluster-wide gauges read from Redis at scrape time (register them on api processes). While Redis is not
   * connected, or does not answer within `timeoutMs`, they are left out of the scrape, so the process's own
   * counters are still served during an outage. A scrape costs a fixed number of Redis commands; only the status
   * breakdown of live tasks needs the records, and it is read by a pass of its own (LiveStatusSnapshot).
   */
  addClusterGauges(
    admin: TaskAdmin,
    queue: Queue<ToolJobData>,
    options: {
      redisReady: () => boolean;
      liveScanLimit?: number;
      liveRefreshMs?: number;
      timeoutMs?: number;
      /** The live catalog from the process's cache, so that a scrape does not read it from Redis. */
      catalog?: () => Iterable<CatalogEntry>;
    },
  ): void {
    const liveStatuses = new LiveStatusSnapshot(
      async () => (await admin.liveCounts(options.liveScanLimit ?? 10_000)).counts,
      options.liveRefreshMs ?? 30_000,
    );
    const fromRedis = <L extends string>(
      metric: Gauge<L> | Counter<L>,
      read: () => Promise<void>,
      unlabelled = false,
    ) => collectFromRedis(metric, read, { ...options, unlabelled });
    let depthRead: Promise<QueueDepth> | undefined;
    // Both depth gauges of one scrape share one read.
    const depth = () => {
      depthRead ??= admin.queueJobs().finally(() => setTimeout(() => (depthRead = undefined), 0));
      return depthRead;
    };
    new Gauge({
      name: `${METRICS_PREFIX}queue_jobs`,
      help:
        'Jobs of the tool queues (cluster-wide) by state: waiting (ready to start when a worker slot frees), ' +
        'active (taken by a worker, waiting for the client included), delayed (retry backoff, held by a ' +
        'per-principal cap, next poll of an external tool)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => {
          // Counts only: a scrape's cost must not grow with anything but the number of tool queues.
          const jobs = await depth();
          for (const state of ['waiting', 'active', 'delayed'] as const) this.set({ state }, jobs[state]);
        });
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}queue_jobs_held`,
      help: 'Jobs held back by per-principal caps (cluster-wide; most are among mcpt_queue_jobs{state="delayed"})',
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => this.set((await depth()).held), true);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}workers`,
      help: 'Worker processes connected to the tool queues (cluster-wide)',
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => this.set(await admin.workerCount()), true);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}tasks_live`,
      help:
        'Non-terminal tasks by status (cluster-wide); status="input_required" are the tasks waiting for the ' +
        'client. Counted over at most the oldest-updated METRICS_LIVE_SCAN_LIMIT live tasks, by a pass at most ' +
        'METRICS_LIVE_REFRESH_MS old.',
      labelNames: ['status'],
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => {
          const counts = await liveStatuses.read();
          for (const status of TASK_STATUSES) {
            if (status === TaskStatus.Working || status === TaskStatus.InputRequired) {
              this.set({ status }, counts[status]);
            }
          }
        });
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}tasks_parked`,
      help:
        'Parked tasks (cluster-wide) by what their tool waits for (docs/durable-execution.md, "Waits"): sleep, event, ' +
        'input (the client\'s answer, without a worker); their jobs are among mcpt_queue_jobs{state="delayed"}',
      labelNames: ['kind'],
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => {
          for (const [kind, count] of Object.entries(await admin.parkedCounts())) this.set({ kind }, count);
        });
      },
    });
    this.#addSchedulingGauges(admin, fromRedis, options.catalog);
    this.#addWebhookMetrics(admin, fromRedis);
    new Gauge({
      // Not `_total`: that suffix is a counter's (Prometheus naming); this is the exact sum mcpt_tasks_live samples.
      name: `${METRICS_PREFIX}tasks_live_all`,
      help: 'Non-terminal tasks (cluster-wide, exact)',
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => this.set((await admin.liveCounts(0)).total), true);
      },
    });
  }

  /**
   * Per tool scheduling (docs/scheduling.md), read once per scrape: running and the global limit, queued jobs (and
   * per principal, the TOP_PRINCIPALS biggest of the first METRICS_QUEUED_SAMPLE waiting jobs, so that the label set
   * stays bounded), the current rate-limit wait, and the retry, timeout and held counters.
   */
  #addSchedulingGauges(
    admin: TaskAdmin,
    fromRedis: <L extends string>(metric: Gauge<L> | Counter<L>, read: () => Promise<void>) => Promise<void>,
    catalog: (() => Iterable<CatalogEntry>) | undefined,
  ): void {
    let pending: Promise<Awaited<ReturnType<TaskAdmin['scheduling']>>> | undefined;
    // Every gauge of one scrape shares one read.
    const read = () => {
      pending ??= admin
        .scheduling(METRICS_QUEUED_SAMPLE, catalog)
        .finally(() => setTimeout(() => (pending = undefined), 0));
      return pending;
    };
    // Each scrape replaces the gauge's series with those of the current read: tools and principals that went away
    // leave the scrape.
    const perToolSeries = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      series: (tool: ToolSchedulingView) => [Partial<Record<L, string>>, number][],
    ) =>
      new Gauge({
        name: `${METRICS_PREFIX}${name}`,
        help,
        labelNames,
        registers: [this.registry],
        collect() {
          return fromRedis(this, async () => {
            const { tools } = await read();
            this.reset();
            for (const tool of tools) for (const [labels, v] of series(tool)) this.set(labels, v);
          });
        },
      });
    const perTool = (name: string, help: string, value: (tool: ToolSchedulingView) => number | undefined) =>
      perToolSeries(name, help, ['tool'], (tool) => {
        const v = value(tool);
        return v === undefined ? [] : [[{ tool: tool.tool }, v]];
      });
    perTool('tool_running', 'Runs of the tool at once (its queue’s active jobs, cluster-wide)', (t) => t.running);
    perTool('tool_concurrency_limit', 'The tool’s global concurrency (absent: none)', (t) => t.limit);
    perTool('tool_queued', 'Jobs of the tool ready to start when a slot frees', (t) => t.queued);
    perTool(
      'tool_delayed',
      'Jobs of the tool not to start before a time: retry backoff, held by a per-principal cap, next poll',
      (t) => t.delayed,
    );
    perTool(
      'tool_rate_limit_wait_seconds',
      'How long the tool’s rate limit holds starts back from now',
      (t) => t.rateLimitedForMs / 1000,
    );
    // Counted in Redis by every worker since the key prefix began (the same value on every replica: max()).
    const perToolCounter = (name: string, help: string, value: (tool: ToolSchedulingView) => number) =>
      new Counter({
        name: `${METRICS_PREFIX}${name}`,
        help,
        labelNames: ['tool'],
        registers: [this.registry],
        collect() {
          return fromRedis(this, async () => {
            const { tools } = await read();
            this.reset();
            for (const tool of tools) this.inc({ tool: tool.tool }, value(tool));
          });
        },
      });
    perToolCounter(
      'tool_retries_total',
      'Runs of the tool that failed and were retried (cluster-wide, counted in Redis)',
      (t) => t.counters.retries,
    );
    perToolCounter('tool_timeouts_total', 'Runs of the tool aborted at its timeoutMs', (t) => t.counters.timeouts);
    perToolCounter(
      'tool_held_total',
      'Times a job of the tool was held back by a per-principal cap',
      (t) => t.counters.parked,
    );
    perToolSeries(
      'tool_queued_by_principal',
      `Waiting jobs of the tool by principal (the ${TOP_PRINCIPALS} biggest of its first ${METRICS_QUEUED_SAMPLE} waiting jobs)`,
      ['tool', 'principal'],
      (tool) =>
        Object.entries(tool.queuedByPrincipal)
          .sort(([, a], [, b]) => b - a)
          .slice(0, TOP_PRINCIPALS)
          .map(([principal, count]) => [{ tool: tool.tool, principal }, count]),
    );
  }

  /** The webhook deliveries of every worker (docs/webhooks.md), counted in Redis: one read per scrape. */
  #addWebhookMetrics(
    admin: TaskAdmin,
    fromRedis: <L extends string>(
      metric: Gauge<L> | Counter<L>,
      read: () => Promise<void>,
      unlabelled?: boolean,
    ) => Promise<void>,
  ): void {
    let pending: ReturnType<TaskAdmin['webhookDeliveries']> | undefined;
    const read = () => {
      pending ??= admin.webhookDeliveries().finally(() => setTimeout(() => (pending = undefined), 0));
      return pending;
    };
    new Counter({
      name: `${METRICS_PREFIX}webhook_deliveries_total`,
      help:
        'Webhook delivery attempts by outcome (cluster-wide, counted in Redis): delivered, failed (to be retried), ' +
        'abandoned (given up: a 4xx, a redirect, a refused target, WEBHOOK_MAX_ATTEMPTS or WEBHOOK_RETRY_FOR_MS), ' +
        'expired (tasks gone with deliveries left)',
      labelNames: ['outcome'],
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => {
          const { outcomes } = await read();
          this.reset();
          for (const [outcome, count] of Object.entries(outcomes)) this.inc({ outcome }, count);
        });
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}webhook_pending_tasks`,
      help: 'Tasks with webhook deliveries not made yet (cluster-wide): due, waiting for a retry, or being delivered',
      registers: [this.registry],
      collect() {
        return fromRedis(this, async () => this.set((await read()).pendingTasks), true);
      },
    });
  }

  /** Per-worker gauges (register them on worker processes). */
  addWorkerGauges(runningTasks: () => number, concurrency: number): void {
    new Gauge({
      name: `${METRICS_PREFIX}worker_running_tasks`,
      help: 'Tools this worker process runs right now',
      registers: [this.registry],
      collect() {
        this.set(runningTasks());
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}worker_concurrency`,
      help: 'Tools this worker process may run at once (WORKER_CONCURRENCY)',
      registers: [this.registry],
    }).set(concurrency);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The status breakdown of live tasks, the one gauge that needs task records (a status is a field of each record,
 * and no Redis counter tracks it). Scrapes get the last pass's counts and start a new pass when those are older
 * than `refreshMs` (one at a time, in the background), so however often /metrics is scraped the records are read
 * at most about once per `refreshMs`; only the first scrape waits for a pass. `refreshMs` 0 reads them on every
 * scrape.
 */
export class LiveStatusSnapshot {
  readonly #read: () => Promise<Record<TaskStatus, number>>;
  readonly #refreshMs: number;
  #last: { counts: Record<TaskStatus, number>; at: number } | undefined;
  #pass: Promise<void> | undefined;

  constructor(read: () => Promise<Record<TaskStatus, number>>, refreshMs: number) {
    this.#read = read;
    this.#refreshMs = refreshMs;
  }

  async read(): Promise<Record<TaskStatus, number>> {
    const last = this.#last;
    if (last !== undefined && this.#refreshMs > 0 && Date.now() - last.at < this.#refreshMs) return last.counts;
    const pass = (this.#pass ??= this.#refresh());
    if (last === undefined || this.#refreshMs === 0) {
      await pass;
      const fresh = this.#last;
      if (fresh === undefined) throw new Error('no live status counts yet');
      return fresh.counts;
    }
    pass.catch(() => undefined);
    return last.counts;
  }

  async #refresh(): Promise<void> {
    const started = Date.now();
    try {
      this.#last = { counts: await this.#read(), at: started };
    } finally {
      this.#pass = undefined;
    }
  }
}
