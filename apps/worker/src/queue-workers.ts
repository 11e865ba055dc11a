// The BullMQ Workers of this process, one per tool queue (ToolQueueWorker): started as tools are served (an
// upstream's tools come and go), each with its handlers, and closed letting the tools they run finish within the
// grace period.
import type { Queue } from 'bullmq';
import {
  isConnectionError,
  type Logger,
  type RedisClient,
  type RedisConnectionLog,
  type TaskStore,
  TOOL_QUEUE_NAME,
  type ToolJobData,
  ToolQueueWorker,
} from '@mcp-tasks/engine';
import { isTerminal, lostSettlement } from '@mcp-tasks/protocol';
import type { WorkerConfig } from './config.ts';
import type { RunEventEmitter } from './run-events.ts';
import { AbortReason, type RunningTasks } from './running-tasks.ts';
import { backoffStrategy } from './scheduling.ts';
import type { ServedTools } from './served-tools.ts';
import type { SlotLender, WaitBudget } from './wait-budget.ts';

type Processor = ConstructorParameters<typeof ToolQueueWorker<ToolJobData>>[1];

export interface QueueWorkerDeps {
  config: WorkerConfig;
  /** BullMQ's connection (worker-engine.ts). */
  connection: RedisClient;
  /**
   * The name BullMQ records as the holder of the jobs this process takes (a job's processedBy): the worker's instance
   * when other workers can see its connections (lost-jobs.ts in the engine), its plain name otherwise.
   */
  holder: string;
  /** The processor of one queue's jobs; a tool waiting for its client lends that queue's slot (wait-budget.ts). */
  processor: (lender: SlotLender) => Processor;
  waitBudget: WaitBudget;
  served: ServedTools;
  running: RunningTasks;
  store: TaskStore;
  events: RunEventEmitter;
  log: Logger;
  /** Where connection errors go (worker-engine.ts). */
  redisErrors: RedisConnectionLog;
}

export class QueueWorkers {
  readonly #workers = new Map<string, ToolQueueWorker<ToolJobData>>();
  /**
   * Queues whose tool has had a global concurrency here: a limit removed at runtime stays in BullMQ's meta until the
   * next applyQueueLimits, and while it does, only a settling job's try starts the next job (ToolQueueWorker).
   */
  readonly #concurrencyLimited = new Set<string>();

  constructor(private readonly deps: QueueWorkerDeps) {}

  /** Starts taking the jobs of `queueName`, unless this process does already. */
  async start(queueName: string): Promise<void> {
    if (this.#workers.has(queueName)) return;
    const { config } = this.deps;
    const lender = this.deps.waitBudget.lender();
    const worker = new ToolQueueWorker<ToolJobData>(
      queueName,
      this.deps.processor(lender),
      {
        connection: this.deps.connection,
        prefix: config.REDIS_PREFIX,
        concurrency: config.WORKER_CONCURRENCY,
        lockDuration: config.WORKER_LOCK_DURATION_MS,
        stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
        maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
        name: this.deps.holder,
        // Waits between runs of a job (RETRY_BACKOFF_TYPE): the tool's retry policy, through RetryLater.
        settings: { backoffStrategy },
      },
      () => this.#hasHadConcurrency(queueName),
    );
    lender.attach(worker);
    this.#handle(queueName, worker);
    this.#workers.set(queueName, worker);
    await worker.waitUntilReady();
  }

  /**
   * Takes the jobs of the `wanted` queues and stops taking those of the others (their queued jobs wait for a worker
   * that has their tool, docs/catalog.md), except the shared queue of earlier versions, drained to its end.
   */
  async keepOnly(wanted: ReadonlySet<string>): Promise<void> {
    for (const queueName of wanted) await this.start(queueName);
    for (const [queueName, worker] of this.#workers) {
      if (wanted.has(queueName) || queueName === TOOL_QUEUE_NAME) continue;
      this.#workers.delete(queueName);
      await this.#close(worker);
    }
  }

  /** Runs the jobs an api from before the catalog left in the shared queue, if any (docs/catalog.md, "Queues"). */
  async drainSharedQueue(shared: Pick<Queue, 'getJobCountByTypes'>): Promise<void> {
    const legacy = await shared.getJobCountByTypes('waiting', 'delayed', 'prioritized', 'active', 'waiting-children');
    if (legacy === 0) return;
    this.deps.log.info('draining the shared queue of an earlier version', { queue: TOOL_QUEUE_NAME, jobs: legacy });
    await this.start(TOOL_QUEUE_NAME);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#workers.values()].map((worker) => this.#close(worker)));
  }

  /** The queues this process takes jobs from now, each with its Worker. */
  running(): IterableIterator<[string, ToolQueueWorker<ToolJobData>]> {
    return this.#workers.entries();
  }

  #handle(queueName: string, worker: ToolQueueWorker<ToolJobData>): void {
    const { running, events, log } = this.deps;
    // BullMQ renews job locks but does not stop a processor whose lock it lost: the job may run elsewhere already
    // (stalled-job recovery), so the tool stops here; the attempt fence refuses whatever it would still settle.
    worker.on('lockRenewalFailed', (jobIds) => {
      // A tool job's id is its task id (toolJobOptions).
      for (const taskId of jobIds) {
        if (running.abort(taskId, AbortReason.LockLost)) log.warn('job lock lost: stopping its tool', { taskId });
      }
    });
    worker.on('active', (job) => events.emit('job:start', job));
    worker.on('completed', (job) => events.emit('job:end', job));
    worker.on('error', (error) => {
      // An outage's errors are the process's one story (RedisConnectionLog), not a warning per queue and retry.
      if (isConnectionError(error)) this.deps.redisErrors.error(error);
      else log.warn('worker error', { queue: queueName, error: error.message, stack: error.stack });
    });
    worker.on('failed', (job, error) => {
      if (!job) return;
      events.emit('job:end', job);
      // The job ran out of attempts (an infrastructure error, not a tool error): settle its task now rather than
      // wait for reconciliation.
      if (job.attemptsMade >= (job.opts.attempts ?? 1)) this.#settleGivenUp(job.data.taskId, error);
    });
  }

  #settleGivenUp(taskId: string, error: Error): void {
    const { store } = this.deps;
    void store
      .get(taskId)
      .then((record) =>
        record && !isTerminal(record.status)
          ? store.settle(record, lostSettlement(`The worker gave up on the task: ${error.message}`))
          : undefined,
      )
      .catch(() => undefined);
  }

  #hasHadConcurrency(queueName: string): boolean {
    if (this.#concurrencyLimited.has(queueName)) return true;
    const limited = this.deps.served
      .entries()
      .some((entry) => entry.queue === queueName && entry.scheduling?.concurrency !== undefined);
    if (limited) this.#concurrencyLimited.add(queueName);
    return limited;
  }

  /** Lets active tools finish within the grace period, then aborts them so their jobs go back to the queue. */
  async #close(worker: ToolQueueWorker<ToolJobData>): Promise<void> {
    const { running, log } = this.deps;
    const closing = worker.close();
    const timer = setTimeout(() => {
      log.warn('grace period over: handing running tasks back to the queue', { tasks: running.ids().length });
      running.abortAll(AbortReason.Shutdown);
    }, this.deps.config.WORKER_SHUTDOWN_GRACE_MS);
    try {
      await closing;
    } finally {
      clearTimeout(timer);
    }
  }
}
