// Builds one worker process: the BullMQ Worker running tools, the cancel listener, and maintenance.
import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import {
  CleanupStack,
  closeRedis,
  createLogger,
  createRedis,
  createToolQueue,
  KeySpace,
  Maintenance,
  parseControlMessage,
  Subscriber,
  TaskStore,
  TOOL_QUEUE_NAME,
  type Logger,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { isTerminal, lostSettlement } from '@mcp-tasks/protocol';
import { toolRegistry } from '@mcp-tasks/tools';
import type { WorkerConfig } from './config.ts';
import { toolProcessor } from './process-job.ts';
import { AbortReason, RunningTasks } from './running-tasks.ts';

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
    const keys = new KeySpace(config.REDIS_PREFIX);
    const redis = cleanup.add('redis', createRedis(config.REDIS_URL, 'mcpt-worker'), closeRedis);
    const workerRedis = cleanup.add('redis-worker', createRedis(config.REDIS_URL, 'mcpt-worker-bull'), closeRedis);
    const subscriberRedis = cleanup.add(
      'redis-subscriber',
      createRedis(config.REDIS_URL, 'mcpt-worker-sub'),
      closeRedis,
    );
    for (const connection of [redis, workerRedis, subscriberRedis]) {
      connection.on('error', (error: Error) => log.warn('redis connection error', { error: error.message }));
    }
    await redis.ping();
    const store = new TaskStore(redis, keys);
    const queue = cleanup.add('queue', createToolQueue(redis, config.REDIS_PREFIX), (q) => q.close());
    const subscriber = new Subscriber(subscriberRedis);
    const running = new RunningTasks();

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
    });
    maintenance.start();
    cleanup.add('maintenance', maintenance, (m) => m.stop());

    const worker = new Worker<ToolJobData>(
      TOOL_QUEUE_NAME,
      toolProcessor({ store, tools: toolRegistry, running, log, workerName: name }),
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
    worker.on('error', (error) => log.warn('worker error', { error: error.message }));
    worker.on('failed', (job, error) => {
      // The job ran out of attempts (an infrastructure error, not a tool error): settle its task now rather than
      // wait for reconciliation.
      if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
      void store
        .get(job.data.taskId)
        .then((record) =>
          record && !isTerminal(record.status)
            ? store.settle(record.taskId, lostSettlement(`The worker gave up on the task: ${error.message}`))
            : undefined,
        )
        .catch(() => undefined);
    });
    await worker.waitUntilReady();
    cleanup.add('bullmq-worker', worker, (w) => closeWorker(w, running, config.WORKER_SHUTDOWN_GRACE_MS, log));
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
