// Builds one worker process: the BullMQ Worker running tools, the cancel listener, and maintenance.
import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import {
  auditLogger,
  auditObserver,
  CleanupStack,
  closeRedis,
  createEngine,
  createLogger,
  createRedis,
  ExternalQueueListener,
  Maintenance,
  parseControlMessage,
  RunnerMetrics,
  TOOL_QUEUE_NAME,
  type Logger,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { isTerminal, lostSettlement, queueOfTool } from '@mcp-tasks/protocol';
import { toolRegistry } from '@mcp-tasks/tools';
import type { WorkerConfig } from './config.ts';
import { metricsUrl, startMetricsServer, stopMetricsServer } from './metrics-server.ts';
import { toolProcessor } from './process-job.ts';
import { AbortReason, RunningTasks } from './running-tasks.ts';
import { WaitBudget } from './wait-budget.ts';

export interface RunningWorker {
  name: string;
  log: Logger;
  close(): Promise<void>;
}

export async function startWorker(config: WorkerConfig): Promise<RunningWorker> {
  const name = `worker-${hostname()}-${process.pid}`;
  const log = createLogger({ service: 'worker', level: config.LOG_LEVEL, format: config.LOG_FORMAT }).child({
    worker: name,
  });
  const cleanup = new CleanupStack();
  try {
    const redis = cleanup.add('redis', createRedis(config, 'mcpt-worker'), closeRedis);
    const workerRedis = cleanup.add('redis-worker', createRedis(config, 'mcpt-worker-bull'), closeRedis);
    const subscriberRedis = cleanup.add('redis-subscriber', createRedis(config, 'mcpt-worker-sub'), closeRedis);
    for (const connection of [redis, workerRedis, subscriberRedis]) {
      connection.on('error', (error: Error) => log.warn('redis connection error', { error: error.message }));
    }
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

    const worker = new Worker<ToolJobData>(
      TOOL_QUEUE_NAME,
      toolProcessor({
        store,
        tools: toolRegistry,
        running,
        log,
        workerName: name,
        events,
        inputs: engine.inputs,
        sessions: engine.sessions,
        input: { timeoutMs: config.INPUT_REQUEST_TIMEOUT_MS, recheckMs: config.INPUT_RECHECK_MS },
        waitBudget,
        external: {
          tasks: engine.external,
          callback:
            config.CALLBACK_SECRET && config.CALLBACK_BASE_URL
              ? { secret: config.CALLBACK_SECRET, baseUrl: config.CALLBACK_BASE_URL }
              : undefined,
          pollMinMs: config.EXTERNAL_POLL_MIN_MS,
          pollMaxMs: Math.max(config.EXTERNAL_POLL_MIN_MS, config.EXTERNAL_POLL_MAX_MS),
        },
      }),
      {
        connection: workerRedis,
        prefix: config.REDIS_PREFIX,
        concurrency: config.WORKER_CONCURRENCY,
        lockDuration: config.WORKER_LOCK_DURATION_MS,
        stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
        maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
        name,
      },
    );
    waitBudget.attach(worker);
    // BullMQ renews job locks but does not stop a processor whose lock it lost: the job may run elsewhere already
    // (stalled-job recovery), so the tool stops here; the attempt fence refuses whatever it would still settle.
    worker.on('lockRenewalFailed', (jobIds) => {
      // A tool job's id is its task id (toolJobOptions).
      for (const taskId of jobIds) {
        if (running.abort(taskId, AbortReason.LockLost)) log.warn('job lock lost: stopping its tool', { taskId });
      }
    });
    worker.on('active', (job) => metrics.jobStarted(job));
    worker.on('error', (error) => log.warn('worker error', { error: error.message }));
    worker.on('failed', (job, error) => {
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
    await worker.waitUntilReady();
    cleanup.add('bullmq-worker', worker, (w) => closeWorker(w, running, config.WORKER_SHUTDOWN_GRACE_MS, log));
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
    // Tools served by external consumers: this worker maps their jobs' outcomes onto the tasks (docs/job-contract.md).
    for (const tool of toolRegistry.list()) {
      const queueName = queueOfTool(toolRegistry.get(tool.name));
      if (queueName === undefined) continue;
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
    }
    log.info('worker ready', {
      queue: TOOL_QUEUE_NAME,
      concurrency: config.WORKER_CONCURRENCY,
      tools: toolRegistry.names(),
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
