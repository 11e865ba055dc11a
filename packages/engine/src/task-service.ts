// The task operations shared by the api (and later the CLI): create a task with its job, find it for its owner,
// wait for it to end, cancel it.
import { randomUUID } from 'node:crypto';
import {
  cancelledSettlement,
  InvalidStateError,
  isTerminal,
  LimitExceededError,
  RequestCancelledError,
  TaskNotFoundError,
  UnavailableError,
  TaskStatus,
  toolQueueName,
  type ExternalRef,
  type Scheduling,
  type TaskKind,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { stopTaskWork } from './stop-task-work.ts';
import { forwardCancel } from './external.ts';
import type { ExternalQueues } from './external-queues.ts';
import type { FairQueue } from './fair-queue.ts';
import type { ToolJobData } from './queue.ts';
import { externalJobOptions, jobQueueOf, scriptedJob, TOOL_QUEUE_NAME, toolJobOptions } from './queue.ts';
import type { RedisClient } from './redis.ts';
import type { RequestContextRecord } from './request-context.ts';
import { type RequestOpening, RequestRefusedError, withOpening } from './request-opening.ts';
import type { Subscriber, WakeOn, Waiter } from './subscriber.ts';
import { OwnerTaskLimitError, type TaskStore } from './records/store.ts';
import type { TraceCarrier } from './tracing.ts';

export interface TaskTiming {
  defaultTtlMs: number;
  maxTtlMs: number;
  minTtlMs: number;
  pollIntervalMs: number;
  /** How often a waiter re-reads the record even without a pub/sub message (a lost message cannot hang it). */
  recheckMs: number;
}

export interface CreateTaskInput {
  kind: TaskKind;
  owner: string;
  sessionId: string;
  tool: string;
  arguments: unknown;
  retrySafe: boolean;
  requestedTtl?: number;
  progressToken?: string | number;
  /** The first statusMessage; default "The task is queued for a worker." (an operator's retry says what it retries). */
  statusMessage?: string;
  /** The BullMQ queue of a tool served by an external consumer (docs/job-contract.md); default: the tool's own queue. */
  queue?: string;
  /** The trace the job's spans join (docs/observability.md); absent while tracing is off. */
  trace?: TraceCarrier;
  /** The tool's scheduling settings as its catalog entry has them (docs/scheduling.md). */
  scheduling?: Scheduling;
  /**
   * The context of the 2026-07-28 request that starts the work (its id is `sessionId`): stored in the step that
   * writes the record, so that a refused call stores none.
   */
  requestContext?: RequestContextRecord;
}

/** How TaskService.waitFor waits (see there). */
export interface WaitOptions {
  signal: AbortSignal;
  read: () => Promise<TaskRecord>;
  /** Ends the wait early with the live record when it holds (a task that needs its client, say). */
  until?: (record: TaskRecord) => boolean | Promise<boolean>;
  /** Ends the wait with the live record after this long; default: no limit. */
  withinMs?: number;
  /** The record as the caller read it already through `read`'s script (saves the first read). */
  first?: TaskRecord;
  /** The caller's own waiter (it closes it); default: one on the task's wake-ups, closed here. */
  waiter?: Waiter;
}

export interface TaskLimits {
  /** The most unfinished tasks (and plain calls) one owner may have at once; absent: no cap. */
  maxLiveTasksPerOwner?: number;
}

export class TaskService {
  /**
   * This process's id as a waiter for tasks: a task read with it (getOwned) publishes its changes on this
   * replica's channel, which one subscription serves for every task waited for here (as BullMQ's QueueEvents).
   */
  readonly watcherId = randomUUID().replaceAll('-', '').slice(0, 16);

  constructor(
    private readonly store: TaskStore,
    private readonly publisher: RedisClient,
    private readonly subscriber: Subscriber,
    readonly timing: TaskTiming,
    readonly limits: TaskLimits = {},
  ) {}

  #externalQueues: ExternalQueues | undefined;
  #fairQueue: FairQueue | undefined;

  /** Orders each tool queue fairly between principals (docs/scheduling.md); without it jobs start in arrival order. */
  useFairQueue(fair: FairQueue): this {
    this.#fairQueue = fair;
    return this;
  }

  /** Enables tools served by external consumers (docs/job-contract.md): their jobs go to these queues. */
  useExternalQueues(queues: ExternalQueues): this {
    this.#externalQueues = queues;
    return this;
  }

  /** The ttl we grant: the requested one clamped to [min, max], the default when none was asked (T-CREATE-2). */
  grantTtl(requested: number | undefined): number {
    const ttl = requested ?? this.timing.defaultTtlMs;
    return Math.min(Math.max(ttl, this.timing.minTtlMs), this.timing.maxTtlMs);
  }

  /**
   * Writes the record and its job; answers only when both are in Redis (invariant 2). A job of one of our tool
   * queues in a fair order is added by the script that writes the record, in the same atomic step. Any other job
   * (an external consumer's queue, or no fair order) is added with `queue.add` after the record: if that fails,
   * the record is removed again and the caller gets an internal error, so no task is left without work.
   */
  async create(input: CreateTaskInput, opening?: RequestOpening): Promise<TaskRecord> {
    const now = Date.now();
    const record: TaskRecord = {
      taskId: randomUUID(),
      kind: input.kind,
      status: TaskStatus.Working,
      statusMessage: input.statusMessage ?? 'The task is queued for a worker.',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: this.grantTtl(input.requestedTtl),
      pollInterval: this.timing.pollIntervalMs,
      owner: input.owner,
      sessionId: input.sessionId,
      tool: input.tool,
      ...(input.progressToken !== undefined ? { progressToken: input.progressToken } : {}),
      ...(input.queue !== undefined ? { external: { mode: 'queue' as const, queue: input.queue } } : {}),
      ...(input.trace ? { trace: input.trace } : {}),
    };
    const queue = this.#queueFor(input.queue ?? toolQueueName(input.tool));
    const fair = input.queue === undefined ? this.#fairQueue?.orderFor(input.tool, queue, record.owner) : undefined;
    const data: ToolJobData = { taskId: record.taskId, tool: input.tool, arguments: input.arguments };
    if (input.trace) data.trace = input.trace;
    // A job of our own tool queues: with a fair order (always in a runner), given its priority and added by the script
    // that writes its record (one round trip, one atomic step); without, by queue.add after it (arrival order,
    // BullMQ's plain wait list).
    const toolJob =
      input.queue === undefined
        ? {
            data: { ...data, owner: record.owner },
            opts: toolJobOptions(record.taskId, input.retrySafe, input.scheduling),
          }
        : undefined;
    const job = fair && toolJob ? scriptedJob(queue, input.tool, toolJob.data, toolJob.opts, now) : undefined;
    try {
      // The request is opened in the same step when its session allows it; an owner at its cap was opened all the
      // same.
      await withOpening(
        opening,
        (open) =>
          this.store.create({
            record,
            arguments: input.arguments,
            ...(this.limits.maxLiveTasksPerOwner !== undefined
              ? { maxLiveTasksPerOwner: this.limits.maxLiveTasksPerOwner }
              : {}),
            ...(fair ? { fair } : {}),
            ...(job ? { job } : {}),
            ...(open ? { open } : {}),
            ...(input.requestContext ? { requestContext: input.requestContext } : {}),
          }),
        (error) => error instanceof OwnerTaskLimitError,
      );
    } catch (error) {
      if (job && !(error instanceof OwnerTaskLimitError) && !(error instanceof RequestRefusedError)) {
        // The step failed, or its answer was lost: a script that fails keeps what it wrote before, so the record
        // may be there without its job. Removed, as when queue.add fails below; a job left without its record is
        // skipped by the worker that takes it.
        await this.store.delete(record).catch(() => undefined);
      }
      if (!(error instanceof OwnerTaskLimitError)) throw error;
      const max = this.limits.maxLiveTasksPerOwner ?? 0;
      throw new LimitExceededError(
        'tasks_per_owner',
        max,
        `Too many unfinished tasks: at most ${max} may run or wait at once per requestor (MAX_TASKS_PER_OWNER); ` +
          'wait for some to finish or cancel them',
      );
    }
    // The job was added with the record.
    if (job) return record;
    try {
      if (toolJob) await queue.add(input.tool, toolJob.data, toolJob.opts);
      else await queue.add(input.tool, data, externalJobOptions(record.taskId, input.retrySafe));
    } catch (error) {
      await this.store.delete(record).catch(() => undefined);
      throw new UnavailableError(`Could not queue the task: ${(error as Error).message}`);
    }
    return record;
  }

  /**
   * The owner's task, or the same -32602 for a task that does not exist, expired, or belongs to someone else
   * (T-ERR-1, T-SEC-1): the caller cannot tell them apart.
   */
  async getOwned(
    taskId: string,
    owner: string,
    options: { watch?: boolean; opening?: RequestOpening } = {},
  ): Promise<TaskRecord> {
    const watcher = options.watch ? this.watcherId : undefined;
    // The request is opened in the same step when its session allows it (RequestOpening).
    const { record } = await withOpening(options.opening, (open) =>
      this.store.getOwnedOpening(taskId, owner, watcher, open),
    );
    return taskOrNotFound(record);
  }

  /**
   * The task read again by a request that read it with getOwned (`watch`) already: the same record or the same
   * not-found, for one Redis command instead of a script in the usual case (RecordStore.reread).
   */
  async reread(taskId: string, owner: string): Promise<TaskRecord> {
    return taskOrNotFound(await this.store.reread(taskId, owner, this.watcherId));
  }

  /**
   * What wakes a waiter for `taskId` on this replica: its id on the replica's channel, subscribed once. Waiting
   * costs no Redis command of its own: the reads register the replica (getOwned with `watch`).
   */
  async wakeOn(taskId: string): Promise<WakeOn> {
    const channel = this.store.keys.replicaChannel(this.watcherId);
    await this.subscriber.pin(channel);
    return { channel, message: taskId };
  }

  /** A waiter for `taskId`'s changes: open it before the read that registers this replica (getOwned with watch). */
  async watch(taskId: string): Promise<Waiter> {
    return this.subscriber.waiter(await this.wakeOn(taskId));
  }

  /**
   * Resolves with the record once it is terminal (T-RES-2). Waits on pub/sub, re-reading the record every
   * `recheckMs` in case a message was lost; rejects when `signal` aborts or the record disappears. `read` must
   * register this replica as a waiter (getOwned with `watch`), so that a change wakes it.
   *
   * With `limit`, resolves earlier with the live record: once `limit.withinMs` have passed, or as soon as the task
   * needs its client (`input_required`), so that the caller can turn to a stream that carries the request.
   * `first`: the record as the caller read it already through `watcher` (saves the first read).
   */
  waitForTerminal(
    taskId: string,
    signal: AbortSignal,
    read: () => Promise<TaskRecord>,
    limit?: { withinMs: number },
    first?: { record: TaskRecord; waiter: Waiter },
  ): Promise<TaskRecord> {
    return this.waitFor(taskId, {
      signal,
      read,
      ...(first ? { first: first.record, waiter: first.waiter } : {}),
      ...(limit
        ? { withinMs: limit.withinMs, until: (record: TaskRecord) => record.status === TaskStatus.InputRequired }
        : {}),
    });
  }

  /**
   * The one wait for a task of both wires: resolves with the record once it is terminal, once `until` holds for
   * it, or once `withinMs` have passed (then with the live record). See waitForTerminal for `read` and `first`.
   */
  async waitFor(taskId: string, options: WaitOptions): Promise<TaskRecord> {
    const { signal, read, until } = options;
    const deadline = options.withinMs !== undefined ? Date.now() + options.withinMs : Infinity;
    const waiter = options.waiter ?? (await this.watch(taskId));
    let given = options.first;
    try {
      for (;;) {
        const record = given ?? (await read());
        given = undefined;
        if (isTerminal(record.status)) return record;
        if (signal.aborted) throw new RequestCancelledError();
        if (until && (await until(record))) return record;
        const left = deadline - Date.now();
        if (left <= 0) return record;
        await waiter.next(Math.min(this.timing.recheckMs, left), signal);
      }
    } finally {
      // The caller's waiter is the caller's to close.
      if (!options.waiter) await waiter.close();
    }
  }

  /**
   * Moves the task to `cancelled` before answering (T-CANCEL-2), then stops the work: a job still queued is
   * removed, a running one is aborted through the control channel.
   */
  async cancel(record: TaskRecord, statusMessage?: string): Promise<TaskRecord> {
    const settlement = cancelledSettlement(statusMessage);
    const moved = await this.store.settle(record, settlement);
    if (!moved.ok) {
      if (moved.reason === 'missing') throw new TaskNotFoundError();
      throw new InvalidStateError(`Cannot cancel task: already in terminal status '${moved.current}'`, moved.current);
    }
    await stopTaskWork(
      [this.#externalQueue(jobQueueOf(record)), this.#externalQueue(TOOL_QUEUE_NAME)],
      this.publisher,
      this.store.keys,
      record.taskId,
    );
    // Read after the transition: a worker marking the task external from now on sees it cancelled and forwards
    // the cancel itself, so one of the two always does (docs/external-tools.md).
    const external = await this.store.externalRef(record.taskId);
    if (external) await this.#stopExternalWork(record.taskId, external);
    return {
      ...record,
      status: TaskStatus.Cancelled,
      statusMessage: settlement.statusMessage,
      lastUpdatedAt: moved.lastUpdatedAt,
      outcome: settlement.outcome,
    };
  }

  async #stopExternalWork(taskId: string, ref: ExternalRef): Promise<void> {
    if (ref.mode === 'queue' && ref.queue !== undefined) {
      await this.#externalQueue(ref.queue)
        .remove(taskId)
        .catch(() => 0);
    }
    await forwardCancel(ref);
  }

  /** The job's queue, known before the record is written (a task without a queue is not created at all). */
  #queueFor(name: string): Queue<ToolJobData> {
    try {
      return this.#externalQueue(name);
    } catch (error) {
      throw new UnavailableError(`Could not queue the task: ${(error as Error).message}`);
    }
  }

  #externalQueue(name: string): Queue<ToolJobData> {
    if (!this.#externalQueues) throw new Error(`No external queues are configured (queue '${name}')`);
    return this.#externalQueues.get(name);
  }

  isTerminal(record: TaskRecord): boolean {
    return isTerminal(record.status);
  }
}

/** A plain call's record read by a task method answers as a missing task does: the caller cannot tell them apart. */
function taskOrNotFound(record: TaskRecord | undefined): TaskRecord {
  if (!record || record.kind !== 'task') throw new TaskNotFoundError();
  return record;
}
