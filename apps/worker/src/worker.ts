// Builds one worker process: the BullMQ Worker running tools, the cancel listener, and maintenance.
import { hostname } from 'node:os';
import type { Worker } from 'bullmq';
import {
  auditLogger,
  applyQueueLimits,
  CatalogConflictError,
  countSchedulingEvent,
  loadSchedulingSettings,
  OwnerCaps,
  CatalogView,
  auditObserver,
  CleanupStack,
  closeRedis,
  createEngine,
  coalesceWrites,
  createLogger,
  createRedis,
  ExternalQueueListener,
  Maintenance,
  parseControlMessage,
  RunnerMetrics,
  startTracing,
  TOOL_QUEUE_NAME,
  type Logger,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { isTerminal, lostSettlement, queueOfTool, type CatalogEntry, type ToolDefinition } from '@mcp-tasks/protocol';
import type { WorkerConfig } from './config.ts';
import { metricsUrl, startMetricsServer, stopMetricsServer } from './metrics-server.ts';
import { PARK_MS, toolProcessor } from './process-job.ts';
import { AbortReason, RunningTasks } from './running-tasks.ts';
import { backoffStrategy, HeldRuns } from './scheduling.ts';
import { ServedTools } from './served-tools.ts';
import { ToolQueueWorker } from './tool-queue-worker.ts';
import type { UpstreamConfig } from './upstream/config.ts';
import { UpstreamTools } from './upstream/upstream-tools.ts';
import { WaitBudget } from './wait-budget.ts';

export interface WorkerSources {
  /** Existing MCP servers whose tools this worker serves too (docs/gateway.md). */
  upstreams?: readonly UpstreamConfig[];
}

export interface RunningWorker {
  name: string;
  log: Logger;
  close(): Promise<void>;
}

/**
 * Starts a worker serving `tools`: publishes their definitions to the catalog (refused, and nothing started, when
 * live workers publish a different definition under one of the names: docs/catalog.md), then takes the jobs of each
 * tool's own queue.
 */
export async function startWorker(
  config: WorkerConfig,
  tools: readonly ToolDefinition[],
  sources: WorkerSources = {},
): Promise<RunningWorker> {
  const name = `worker-${hostname()}-${process.pid}`;
  const log = createLogger({ service: 'worker', level: config.LOG_LEVEL, format: config.LOG_FORMAT }).child({
    worker: name,
  });
  const cleanup = new CleanupStack();
  try {
    // Each own tool's scheduling settings with the operator's overrides (docs/scheduling.md): published, so that
    // workers that disagree on them are refused like any other difference of definition.
    const scheduling = loadSchedulingSettings(config);
    const served = new ServedTools(tools, (tool) => scheduling.overrideFor(tool));
    const upstreams = sources.upstreams ?? [];
    if (tools.length === 0 && upstreams.length === 0) {
      throw new Error('A worker needs at least one tool to serve (MCPT_TOOLS) or an upstream MCP server');
    }
    // First in, last out: the spans of the last attempts are exported after the BullMQ workers have closed.
    const tracing = await startTracing('mcp-task-runner-worker');
    if (tracing) cleanup.add('tracing', tracing, (t) => t.shutdown());
    const redis = cleanup.add('redis', createRedis(config, 'mcpt-worker'), closeRedis);
    const workerRedis = cleanup.add('redis-worker', createRedis(config, 'mcpt-worker-bull'), closeRedis);
    const subscriberRedis = cleanup.add('redis-subscriber', createRedis(config, 'mcpt-worker-sub'), closeRedis);
    for (const connection of [redis, workerRedis, subscriberRedis]) {
      connection.on('error', (error: Error) => log.warn('redis connection error', { error: error.message }));
    }
    // The commands of one event-loop turn leave in one socket write (redis.ts): jobs settling together send their
    // record reads, transitions and BullMQ's moves as one write per connection instead of a system call each.
    coalesceWrites(redis);
    coalesceWrites(workerRedis);
    await redis.ping();
    // BullMQ objects share the BullMQ worker's connection, so that pipelines on `redis` stay cheap (see api app.ts).
    const engine = cleanup.add(
      'engine',
      createEngine({ redis, queues: workerRedis, subscriber: subscriberRedis }, config),
      (e) => e.close(),
    );
    const { keys, store, events, queue, externalQueues, subscriber } = engine;
    const metrics = new RunnerMetrics('worker');
    store.observe(metrics.taskObserver());
    store.observe(auditObserver(auditLogger(log))); // task.completed / failed / cancelled (T-AUDIT-1)
    // The dashboard's charts (activity.ts): run time from the start of the attempt that settled the task. An entry
    // lives while its job is active here, so there are at most WORKER_CONCURRENCY per tool queue.
    const attemptStarts = new Map<string, number>();
    const figures = config.DASHBOARD_FIGURES;
    if (figures)
      store.observe(
        engine.activity.observer((taskId, at) => {
          const started = attemptStarts.get(taskId);
          return started === undefined ? undefined : Math.max(0, at - started);
        }),
      );
    const running = new RunningTasks();
    const waitBudget = new WaitBudget(config.WORKER_INPUT_WAIT_SLOTS);

    // Cancellation: a broadcast from the api, and a periodic check in case a message was missed.
    await subscriber.listen(keys.controlChannel(), (raw) => {
      const message = parseControlMessage(raw);
      if (message?.type === 'cancel' && running.abort(message.taskId, AbortReason.Cancelled)) {
        log.info('cancelling running task', { taskId: message.taskId });
      }
    });
    const cancelCheck = setInterval(() => {
      const ids = running.ids();
      void store.statuses(ids).then(
        (statuses) =>
          statuses.forEach((status, i) => {
            const id = ids[i];
            if (id && (status === undefined || isTerminal(status)))
              running.abort(id, status ? AbortReason.Cancelled : AbortReason.Gone);
          }),
        () => undefined,
      );
    }, config.CANCEL_CHECK_INTERVAL_MS);
    cleanup.add('cancel-check', cancelCheck, clearInterval);

    const maintenance = new Maintenance(redis, store, queue, log, {
      intervalMs: config.MAINTENANCE_INTERVAL_MS,
      reconcileAfterMs: config.RECONCILE_AFTER_MS,
      batchSize: 200,
      externalQueues,
    });
    maintenance.start();
    cleanup.add('maintenance', maintenance, (m) => m.stop());

    // Upstream sessions close after the BullMQ workers (registered below) have let their calls finish.
    const upstreamTools =
      upstreams.length === 0
        ? undefined
        : cleanup.add('upstreams', await UpstreamTools.start(upstreams, log), (u) => u.close());
    // Before any job is taken: a conflicting definition of an own tool stops this worker here.
    await publishServed(engine.catalog, served, upstreamTools, log);
    const applyLimits = () =>
      Promise.all(
        served
          .entries()
          .filter((entry) => !entry.external)
          .map((entry) => applyQueueLimits(externalQueues.get(entry.queue), entry.scheduling)),
      );
    await applyLimits();
    // Again at every heartbeat: the settings come back after a Redis restart that lost them.
    const limitsTimer = setInterval(() => {
      applyLimits().catch((error: unknown) => log.warn('queue limits not applied', { error: String(error) }));
    }, config.CATALOG_HEARTBEAT_MS);
    limitsTimer.unref();
    cleanup.add('queue-limits', limitsTimer, clearInterval);
    const ownerCaps = new OwnerCaps(redis, keys, externalQueues, {
      maxRunningPerOwner: scheduling.maxRunningPerOwner,
      leaseMs: config.WORKER_LOCK_DURATION_MS,
    });
    const held = new HeldRuns(ownerCaps);
    held.start(Math.max(100, Math.floor(config.WORKER_LOCK_DURATION_MS / 3)), scheduling.ownerCapRecheckMs, (error) =>
      log.warn('per-requestor caps not maintained', { error: String(error) }),
    );
    cleanup.add('held-runs', held, (h) => h.stop());
    const processorOf = (waitBudgetOfQueue: { enter(): () => void }) =>
      toolProcessor({
        store,
        tools: served,
        running,
        log,
        workerName: name,
        runningNoteAfterMs: config.RUNNING_NOTE_AFTER_MS,
        events,
        inputs: engine.inputs,
        sessions: engine.sessions,
        input: { timeoutMs: config.INPUT_REQUEST_TIMEOUT_MS, recheckMs: config.INPUT_RECHECK_MS },
        waitBudget: waitBudgetOfQueue,
        scheduling: (tool) => served.entries().find((entry) => entry.name === tool)?.scheduling,
        caps: { owner: ownerCaps, held, maxRunningPerOwner: scheduling.maxRunningPerOwner, parkMs: PARK_MS },
        count: (tool, counter) => {
          countSchedulingEvent(redis, keys, tool, counter).catch(() => undefined);
        },
        external: {
          tasks: engine.external,
          callback:
            config.CALLBACK_SECRET && config.CALLBACK_BASE_URL
              ? { secret: config.CALLBACK_SECRET, baseUrl: config.CALLBACK_BASE_URL }
              : undefined,
          pollMinMs: config.EXTERNAL_POLL_MIN_MS,
          pollMaxMs: Math.max(config.EXTERNAL_POLL_MIN_MS, config.EXTERNAL_POLL_MAX_MS),
        },
      });
    const queueWorkers = new Map<string, Worker<ToolJobData>>();
    cleanup.add('bullmq-workers', queueWorkers, (workers) =>
      Promise.all([...workers.values()].map((w) => closeWorker(w, running, config.WORKER_SHUTDOWN_GRACE_MS, log))).then(
        () => undefined,
      ),
    );
    // Queues whose tool has had a global concurrency here: a limit removed at runtime stays in BullMQ's meta until
    // the next applyLimits, and while it does, only a settling job's try starts the next job (ToolQueueWorker).
    const concurrencyLimited = new Set<string>();
    const hasHadConcurrency = (queueName: string): boolean => {
      if (concurrencyLimited.has(queueName)) return true;
      const limited = served
        .entries()
        .some((entry) => entry.queue === queueName && entry.scheduling?.concurrency !== undefined);
      if (limited) concurrencyLimited.add(queueName);
      return limited;
    };
    const startQueueWorker = async (queueName: string) => {
      if (queueWorkers.has(queueName)) return;
      const lender = waitBudget.lender();
      const worker = new ToolQueueWorker<ToolJobData>(
        queueName,
        processorOf(lender),
        {
          connection: workerRedis,
          prefix: config.REDIS_PREFIX,
          concurrency: config.WORKER_CONCURRENCY,
          lockDuration: config.WORKER_LOCK_DURATION_MS,
          stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
          maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
          name,
          // Waits between runs of a job (RETRY_BACKOFF_TYPE): the tool's retry policy, through RetryLater.
          settings: { backoffStrategy },
        },
        () => hasHadConcurrency(queueName),
      );
      lender.attach(worker);
      // BullMQ renews job locks but does not stop a processor whose lock it lost: the job may run elsewhere already
      // (stalled-job recovery), so the tool stops here; the attempt fence refuses whatever it would still settle.
      worker.on('lockRenewalFailed', (jobIds) => {
        // A tool job's id is its task id (toolJobOptions).
        for (const taskId of jobIds) {
          if (running.abort(taskId, AbortReason.LockLost)) log.warn('job lock lost: stopping its tool', { taskId });
        }
      });
      worker.on('active', (job) => {
        metrics.jobStarted(job);
        if (!figures) return;
        const started = job.processedOn ?? Date.now();
        attemptStarts.set(job.data.taskId, started);
        if (job.attemptsStarted <= 1) engine.activity.started(Math.max(0, started - job.timestamp), started);
      });
      worker.on('completed', (job) => attemptStarts.delete(job.data.taskId));
      worker.on('error', (error) => log.warn('worker error', { queue: queueName, error: error.message }));
      worker.on('failed', (job, error) => {
        if (job) attemptStarts.delete(job.data.taskId);
        // The job ran out of attempts (an infrastructure error, not a tool error): settle its task now rather than
        // wait for reconciliation.
        if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
        void store
          .get(job.data.taskId)
          .then((record) =>
            record && !isTerminal(record.status)
              ? store.settle(record, lostSettlement(`The worker gave up on the task: ${error.message}`))
              : undefined,
          )
          .catch(() => undefined);
      });
      queueWorkers.set(queueName, worker);
      await worker.waitUntilReady();
    };
    const ownQueues = () =>
      served
        .entries()
        .filter((entry) => !entry.external)
        .map((entry) => entry.queue);
    const queues = ownQueues();
    for (const queueName of queues) await startQueueWorker(queueName);
    // Jobs an api from before the catalog left in the shared queue are still run (docs/catalog.md, "Queues").
    const legacy = await queue.getJobCountByTypes('waiting', 'delayed', 'prioritized', 'active', 'waiting-children');
    if (legacy > 0) {
      log.info('draining the shared queue of an earlier version', { queue: TOOL_QUEUE_NAME, jobs: legacy });
      await startQueueWorker(TOOL_QUEUE_NAME);
    }
    // Each beat (and each change of an upstream's tools: list_changed, a restart) publishes what is served now, runs
    // the queues of new tools and stops taking jobs of tools that left (their queued jobs wait for a worker that has
    // them, as in docs/catalog.md). One sync at a time.
    let syncing = Promise.resolve();
    const sync = () => {
      syncing = syncing
        .then(async () => {
          const before = served.names().join(',');
          await publishServed(engine.catalog, served, upstreamTools, log);
          if (!upstreamTools) return;
          const wanted = new Set(ownQueues());
          for (const queueName of wanted) await startQueueWorker(queueName);
          for (const [queueName, worker] of queueWorkers) {
            if (wanted.has(queueName) || queueName === TOOL_QUEUE_NAME) continue;
            queueWorkers.delete(queueName);
            await closeWorker(worker, running, config.WORKER_SHUTDOWN_GRACE_MS, log);
          }
          if (served.names().join(',') !== before) log.info('served tools changed', { tools: served.names() });
        })
        .catch((error: unknown) => {
          log.error('tool catalog not refreshed', { error: error instanceof Error ? error.message : String(error) });
        });
    };
    const heartbeat = setInterval(sync, config.CATALOG_HEARTBEAT_MS);
    heartbeat.unref();
    cleanup.add('catalog-heartbeat', heartbeat, clearInterval);
    upstreamTools?.onChange(sync);
    if (config.WORKER_METRICS_PORT !== undefined) {
      metrics.addWorkerGauges(() => running.ids().length, config.WORKER_CONCURRENCY);
      const server = await startMetricsServer(metrics, {
        host: config.WORKER_METRICS_HOST,
        port: config.WORKER_METRICS_PORT,
        ...(config.METRICS_TOKEN !== undefined ? { token: config.METRICS_TOKEN } : {}),
      });
      cleanup.add('metrics-server', server, stopMetricsServer);
      log.info('metrics served', {
        url: metricsUrl(server, config.WORKER_METRICS_HOST),
        token: config.METRICS_TOKEN !== undefined,
      });
    }
    // Tools served by external consumers: this worker maps their jobs' outcomes onto the tasks (docs/job-contract.md),
    // for its own queue tools and for those a consumer in another language published to the catalog.
    const listening = new Set<string>();
    const listen = async (queueName: string) => {
      if (listening.has(queueName)) return;
      listening.add(queueName);
      const listener = new ExternalQueueListener(queueName, {
        env: config,
        prefix: config.REDIS_PREFIX,
        redis,
        keys,
        store,
        external: engine.external,
        log,
      });
      cleanup.add(`external-queue-listener-${queueName}`, listener, (l) => l.close());
      await listener.start();
    };
    const listenToCatalog = (entries: Iterable<CatalogEntry>) => {
      for (const entry of entries) {
        if (!entry.external) continue;
        listen(entry.queue).catch((error: unknown) =>
          log.warn('external queue not listened to', { queue: entry.queue, error: String(error) }),
        );
      }
    };
    for (const tool of tools) {
      const queueName = queueOfTool(tool);
      if (queueName !== undefined) await listen(queueName);
    }
    const catalogView = new CatalogView(engine.catalog, subscriber, {
      reloadMs: config.CATALOG_RELOAD_MS,
      onError: (error) => log.warn('tool catalog not read', { error: String(error) }),
    });
    cleanup.add('catalog-view', catalogView, (view) => view.close());
    catalogView.onChange((entries) => listenToCatalog(entries.values()));
    await catalogView.start();
    listenToCatalog(catalogView.entries().values());
    log.info('worker ready', {
      queues,
      concurrency: config.WORKER_CONCURRENCY,
      tools: served.names(),
      tracing: tracing !== undefined,
    });
    return {
      name,
      log,
      close: () =>
        cleanup.releaseAll((step, error) => log.error('shutdown step failed', { step, error: String(error) })),
    };
  } catch (error) {
    await cleanup.releaseAll();
    throw error;
  }
}

/** Lets active tools finish within the grace period, then aborts them so their jobs go back to the queue. */
async function closeWorker(worker: Worker, running: RunningTasks, graceMs: number, log: Logger): Promise<void> {
  const closing = worker.close();
  const timer = setTimeout(() => {
    log.warn('grace period over: handing running tasks back to the queue', { tasks: running.ids().length });
    running.abortAll(AbortReason.Shutdown);
  }, graceMs);
  try {
    await closing;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Publishes what the worker serves. An upstream tool the catalog refuses (live workers serve another definition
 * under its name: an upstream changed a tool, or two upstreams disagree) is withheld until a later beat succeeds
 * with it; a refused own tool is an error, as at start-up.
 */
async function publishServed(
  catalog: { publish(entries: readonly CatalogEntry[]): Promise<unknown> },
  served: ServedTools,
  upstreamTools: UpstreamTools | undefined,
  log: Logger,
): Promise<void> {
  const withheld = new Set<string>();
  if (upstreamTools) served.update(upstreamTools.current());
  for (;;) {
    try {
      await catalog.publish(served.entries());
      return;
    } catch (error) {
      if (!(error instanceof CatalogConflictError) || served.isOwn(error.tool) || !upstreamTools) throw error;
      log.error('upstream tool withheld: the catalog has another definition under its name', {
        tool: error.tool,
        error: error.message,
      });
      withheld.add(error.tool);
      served.update(upstreamTools.current(), withheld);
    }
  }
}
