// Builds one worker process, step by step: each resource is registered on the cleanup stack as it is acquired, and
// released in reverse order at close, or at once when a later step of the start fails.
import { hostname } from 'node:os';
import {
  RateLimiter,
  auditLogger,
  catalogBoundsOf,
  CatalogView,
  CleanupStack,
  countSchedulingEvent,
  createLogger,
  loadSchedulingSettings,
  logCatalogRefusals,
  Maintenance,
  startTracing,
  workerInstance,
  type Logger,
  type OwnerCaps,
  type SchedulingSettings,
} from '@mcp-tasks/engine';
import type { ToolDefinition } from '@mcp-tasks/protocol';
import type { JobDeps } from './attempt.ts';
import { listenForCancels } from './cancellation.ts';
import { keepPublished, publishServed, withdrawServed } from './catalog-publishing.ts';
import type { WorkerConfig } from './config.ts';
import { listenToExternalQueues } from './external-listening.ts';
import { serveMetrics } from './metrics-server.ts';
import { PARK_MS, toolProcessor } from './process-job.ts';
import { QueueWorkers } from './queue-workers.ts';
import { connectionsVisible, keepRecoveringLostJobs } from './recovery.ts';
import { observeRuns, type RunEventEmitter } from './run-events.ts';
import { RunningTasks } from './running-tasks.ts';
import type { HeldRuns } from './scheduling.ts';
import { keepQueueLimits, startOwnerCaps } from './scheduling-upkeep.ts';
import { ServedTools } from './served-tools.ts';
import type { UpstreamConfig } from './upstream/config.ts';
import { UpstreamTools } from './upstream/upstream-tools.ts';
import { WaitBudget } from './wait-budget.ts';
import { startWebhookDelivery } from './webhook-delivering.ts';
import { openEngine, type WorkerEngine } from './worker-engine.ts';

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
  // Unique to this process: its connections and the jobs it takes carry it, so that other workers can tell that it is
  // gone (lost-jobs.ts in the engine) even when a restarted container's process has the same name.
  const instance = workerInstance(name);
  const log = createLogger({ service: 'worker', level: config.LOG_LEVEL, format: config.LOG_FORMAT }).child({
    worker: name,
  });
  const cleanup = new CleanupStack();
  try {
    // Each own tool's scheduling settings with the operator's overrides (docs/scheduling.md): published, so that
    // workers that disagree on them are refused like any other difference of definition.
    const scheduling = loadSchedulingSettings(config);
    const served = new ServedTools(tools, {
      override: (tool) => scheduling.overrideFor(tool),
      bounds: catalogBoundsOf(config),
    });
    const upstreams = sources.upstreams ?? [];
    if (tools.length === 0 && upstreams.length === 0) {
      throw new Error('A worker needs at least one tool to serve (MCPT_TOOLS) or an upstream MCP server');
    }
    // First in, last out: the spans of the last attempts are exported after the BullMQ workers have closed.
    const tracing = await startTracing('mcp-task-runner-worker');
    if (tracing) cleanup.add('tracing', tracing, (t) => t.shutdown());
    const opened = await openEngine(config, log, cleanup, instance);
    const { engine } = opened;
    const recoverable = await connectionsVisible(opened.redis, instance, log);
    // Every own tool's schema compiles within its budget, as every reader of the catalog will compile it.
    await served.checkOwn(engine.catalog.schemas);
    const { metrics, runEvents } = observeRuns(engine, log, config.DASHBOARD_FIGURES);
    const running = new RunningTasks();
    await listenForCancels(engine, running, config.CANCEL_CHECK_INTERVAL_MS, log, cleanup);
    startMaintenance(config, opened, log, cleanup);
    await startWebhookDelivery(opened, name, log, cleanup);
    // Upstream sessions close after the BullMQ workers (registered below) have let their calls finish.
    const upstreamTools =
      upstreams.length === 0
        ? undefined
        : cleanup.add(
            'upstreams',
            await UpstreamTools.start(upstreams, log, {
              worker: name,
              shared: { gateway: engine.gateway, keys: engine.keys },
              heartbeatMs: config.CATALOG_HEARTBEAT_MS,
              admit: (entry) => engine.catalog.schemas.admit(entry),
            }),
            (u) => u.close(),
          );
    cleanup.add('catalog-refusals', logCatalogRefusals(engine.catalog, log), (unsubscribe) => unsubscribe());
    const publishing = { catalog: engine.catalog, publisher: name, served, upstreamTools, log };
    // Before any job is taken: a conflicting definition of an own tool stops this worker here.
    await publishServed(publishing);
    cleanup.add('catalog-entries', publishing, withdrawServed);
    await keepQueueLimits(served, engine.externalQueues, config.CATALOG_HEARTBEAT_MS, log, cleanup);
    const caps = startOwnerCaps(opened, scheduling, config.WORKER_LOCK_DURATION_MS, log, cleanup);
    // The live catalog: the tools child tasks call (ctx.callTool), and the queues external consumers publish.
    const catalogView = await openCatalogView(config, engine, log, cleanup);
    const holder = recoverable ? instance : name;
    const parts = { name, holder, served, running, runEvents, log, scheduling, caps, catalogView };
    const queueWorkers = cleanup.add('bullmq-workers', toolQueueWorkers(config, opened, parts), (workers) =>
      workers.close(),
    );
    if (recoverable) {
      const { redis } = opened;
      const recovery = { redis, keys: engine.keys, instance, queues: queueWorkers, store: engine.store, log };
      keepRecoveringLostJobs({ ...recovery, intervalMs: config.WORKER_LIVENESS_CHECK_MS }, cleanup);
    }
    const ownQueues = served.queuesRunHere();
    for (const queueName of ownQueues) await queueWorkers.start(queueName);
    await queueWorkers.drainSharedQueue(engine.queue);
    keepPublished(publishing, queueWorkers, config.CATALOG_HEARTBEAT_MS, cleanup);
    await serveMetrics(config, metrics, running, log, cleanup);
    await listenToExternalQueues(config, opened, tools, catalogView, log, cleanup);
    log.info('worker ready', {
      queues: ownQueues,
      concurrency: config.WORKER_CONCURRENCY,
      tools: served.names(),
      tracing: tracing !== undefined,
      webhooks: engine.webhooks.enabled,
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

/** The expiry sweep and the reconciliation of tasks whose job vanished (maintenance.ts). */
function startMaintenance(config: WorkerConfig, { redis, engine }: WorkerEngine, log: Logger, cleanup: CleanupStack) {
  const maintenance = new Maintenance(redis, engine.store, engine.queue, log, {
    intervalMs: config.MAINTENANCE_INTERVAL_MS,
    reconcileAfterMs: config.RECONCILE_AFTER_MS,
    batchSize: 200,
    externalQueues: engine.externalQueues,
  });
  maintenance.start();
  cleanup.add('maintenance', maintenance, (m) => m.stop());
}

/** The process's view of the live tool catalog (docs/catalog.md), started and registered for its close. */
async function openCatalogView(
  config: WorkerConfig,
  engine: WorkerEngine['engine'],
  log: Logger,
  cleanup: CleanupStack,
): Promise<CatalogView> {
  const catalogView = new CatalogView(engine.catalog, engine.subscriber, {
    reloadMs: config.CATALOG_RELOAD_MS,
    onError: (error) => log.warn('tool catalog not read', { error: String(error) }),
  });
  cleanup.add('catalog-view', catalogView, (view) => view.close());
  await catalogView.start();
  return catalogView;
}

interface QueueParts {
  name: string;
  /** What BullMQ records as the holder of this worker's jobs (QueueWorkerDeps.holder). */
  holder: string;
  served: ServedTools;
  running: RunningTasks;
  runEvents: RunEventEmitter;
  log: Logger;
  scheduling: SchedulingSettings;
  caps: { owner: OwnerCaps; held: HeldRuns };
  catalogView: CatalogView;
}

/** The BullMQ Workers of the tool queues, none started yet, and what their processors get. */
function toolQueueWorkers(config: WorkerConfig, opened: WorkerEngine, parts: QueueParts): QueueWorkers {
  const jobDeps = jobDepsOf(config, opened, parts);
  return new QueueWorkers({
    config,
    connection: opened.bullmq,
    holder: parts.holder,
    processor: (lender) => toolProcessor({ ...jobDeps, waitBudget: lender }),
    waitBudget: new WaitBudget(config.WORKER_INPUT_WAIT_SLOTS),
    served: parts.served,
    running: parts.running,
    store: opened.engine.store,
    events: parts.runEvents,
    log: parts.log,
    redisErrors: opened.connectionLog,
  });
}

/** What every tool-queue processor of this worker gets, but the wait budget (one lender per queue). */
function jobDepsOf(
  config: WorkerConfig,
  { redis, engine }: WorkerEngine,
  parts: QueueParts,
): Omit<JobDeps, 'waitBudget'> {
  const { served, scheduling } = parts;
  return {
    store: engine.store,
    tools: served,
    running: parts.running,
    log: parts.log,
    workerName: parts.name,
    runningNoteAfterMs: config.RUNNING_NOTE_AFTER_MS,
    events: engine.events,
    inputs: engine.inputs,
    sessions: engine.sessions,
    input: { timeoutMs: config.INPUT_REQUEST_TIMEOUT_MS, recheckMs: config.INPUT_RECHECK_MS },
    scheduling: (tool) => served.entries().find((entry) => entry.name === tool)?.scheduling,
    caps: { ...parts.caps, maxRunningPerOwner: scheduling.maxRunningPerOwner, parkMs: PARK_MS },
    count: (tool, counter) => {
      countSchedulingEvent(redis, engine.keys, tool, counter).catch(() => undefined);
    },
    durable: {
      maxBytes: config.DURABLE_MAX_BYTES,
      maxEntries: config.DURABLE_MAX_STEPS,
      maxTotalBytes: config.DURABLE_MAX_TOTAL_BYTES,
    },
    durableWaits: { signals: engine.signals, maxWaits: config.DURABLE_MAX_WAITS },
    children: {
      tasks: engine.tasks,
      store: engine.store,
      catalog: () => Promise.resolve(parts.catalogView),
      arguments: engine.arguments,
      audit: auditLogger(parts.log),
      rates: new RateLimiter(redis, engine.keys, {
        windowMs: config.RATE_LIMIT_WINDOW_MS,
        perPrincipal: config.RATE_LIMIT_PER_PRINCIPAL,
        perAddress: 0,
        failedLookups: 0,
        failedLookupsPerAddress: 0,
        initializePerPrincipal: 0,
        initializePerAddress: 0,
      }),
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
  };
}
