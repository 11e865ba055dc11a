// The task operations shared by the api (and later the CLI): create a task with its job, find it for its owner,
// wait for it to end, cancel it.
import { randomUUID } from 'node:crypto';
import {
  callDigest,
  cancelledSettlement,
  InvalidInputError,
  InvalidStateError,
  LocalError,
  LocalErrorCode,
  isTerminal,
  LimitExceededError,
  NonDeterministicCallError,
  RequestCancelledError,
  TaskNotFoundError,
  UnavailableError,
  TaskStatus,
  toolQueueName,
  type DurableFacts,
  type ExternalRef,
  type Scheduling,
  type TaskKind,
  type TaskRecord,
  type WebhookTarget,
} from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { SessionCalls } from '../sessions/session-calls.ts';
import { SessionEvents } from '../sessions/session-events.ts';
import { stopTaskWork } from './stop-task-work.ts';
import { forwardCancel } from './external.ts';
import type { ExternalQueues } from '../external-queues.ts';
import type { FairQueue } from '../scheduling/fair-queue.ts';
import type { ToolJobData } from '../queue.ts';
import { scriptedJob } from '../bullmq/index.ts';
import { externalJobOptions, jobQueueOf, TOOL_QUEUE_NAME, toolJobOptions } from '../queue.ts';
import type { RedisClient } from '../redis.ts';
import type { RequestContextRecord } from '../request-context.ts';
import { type RequestOpening, withOpening } from '../request-opening.ts';
import type { Subscriber, WakeOn, Waiter } from '../subscriber.ts';
import { type Created, type NewTask, OwnerTaskLimitError, type TaskStore } from '../records/store.ts';
import type { TraceCarrier } from '@mcp-tasks/runtime';

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
  /**
   * The call's idempotency key (docs/durable-execution.md, "Idempotency keys"): while a task filed under it for the
   * same owner lives, that task is answered (`reused`) and nothing is written; one filed for another call (`digest`:
   * of its tool and arguments) refuses this one.
   */
  idempotency?: {
    key: string;
    digest: string;
    maxKeys: number;
    /**
     * Whether the caller proves it owns what the owner owns (a bearer token, a 2025-11-25 session): a refusal then
     * names the task filed under the key. Without authentication on 2026-07-28 the owner is a client address that
     * other clients share and a task id is the task's capability (X-SEC-2): the refusal names none.
     */
    namesTask?: boolean;
  };
  /**
   * The task whose running tool starts this one (ctx.callTool): the child is filed under the call's key in the same
   * step, and a call key that names a child of the same call already answers that child (`reused`); one that names
   * the child of another call (another tool, other arguments) rejects with a NonDeterministicCallError. Refused with
   * a LocalError once a later attempt of the parent runs it, or once the parent has ended. `digest`: of the call as
   * the tool made it (default: of `tool` and `arguments`); `keyed`: the tool named the key.
   */
  parent?: { taskId: string; key: string; attempt: number; maxEntries: number; digest?: string; keyed?: boolean };
  /**
   * The failed task this one continues (`mcpt retry --resume`): it begins with that task's checkpoint, steps and the
   * child calls that ended with a result (all but `drop`, child task ids), copied in the step that creates it.
   */
  resume?: { taskId: string; drop: string[]; durable?: DurableFacts };
  /** The task expires by then at the latest (epoch ms): a child's parent's expiry. */
  expiresBy?: number;
  /** Where the task is posted when it changes (docs/webhooks.md); kept on the record. */
  webhook?: WebhookTarget;
  /**
   * A plain call's request id as JSON (the api's calls/plain-calls.ts): filed under it in its session's calls hash,
   * for notifications/cancelled, by the step that writes the record (no command of its own).
   */
  filed?: string;
}

/** A created task, or (`reused`) the task an idempotency key or a parent's call key names already. */
export type CreatedTask = TaskRecord & { readonly reused?: true };

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
  /**
   * The most child tasks a task may start (MAX_CHILDREN_PER_TASK): written on each task created here but a child,
   * which inherits its parent's in the create script; absent: the default.
   */
  maxChildrenPerTask?: number;
}

const DEFAULT_MAX_CHILDREN_PER_TASK = 1000;

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

  get #maxChildren(): number {
    return this.limits.maxChildrenPerTask ?? DEFAULT_MAX_CHILDREN_PER_TASK;
  }

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
   * Writes the record and its job in one atomic step (the create script): answers only when both are in Redis, and
   * no reader (the reconciler included) ever sees one without the other (invariant 2). That holds for every queue:
   * one of our tool queues (prioritized in the tool's fair order) and an external consumer's (docs/job-contract.md)
   * alike. A step that fails after writing the record (a script keeps what it wrote) has the record removed again.
   */
  async create(input: CreateTaskInput, opening?: RequestOpening): Promise<CreatedTask> {
    const created = await this.#create(input, opening);
    if (!('existing' in created)) return created.record;
    return this.#existing(input, created.existing, opening);
  }

  /**
   * create, for a caller that waits for the task at once (a plain call): a waiter on the task's wake-ups is open
   * before the step that writes the record, and that step names this replica among the record's waiters, so that
   * the task's first change wakes the caller without a read to register it first (waitFor with `first` and
   * `waiter`; the caller closes the waiter). An idempotency key or a parent's call key that names another task
   * answers that task with no waiter (undefined): the caller reads it as any other.
   */
  async createWatched(
    input: CreateTaskInput,
    opening?: RequestOpening,
  ): Promise<{ record: CreatedTask; waiter: Waiter | undefined }> {
    const taskId = randomUUID();
    const waiter = await this.watch(taskId);
    try {
      const created = await this.#create({ ...input, taskId, waiter: this.watcherId }, opening);
      if (!('existing' in created)) return { record: created.record, waiter };
      await waiter.close();
      return { record: await this.#existing(input, created.existing, opening), waiter: undefined };
    } catch (error) {
      await waiter.close();
      throw error;
    }
  }

  /** The task an idempotency key or a parent's call key named, as it is now; a gone one is replaced once. */
  async #existing(
    input: CreateTaskInput,
    existing: { taskId: string; sameCall: boolean },
    opening: RequestOpening | undefined,
    replaced = false,
  ): Promise<CreatedTask> {
    const { key, namesTask } = input.idempotency ?? { key: '' };
    if (input.parent && !existing.sameCall) throw await this.#otherCall(input, input.parent, existing.taskId);
    const record = await this.store.get(existing.taskId);
    if (record && record.owner === input.owner) {
      if (existing.sameCall) return { ...record, reused: true };
      const task = namesTask === true ? ` (task ${existing.taskId})` : '';
      throw new InvalidInputError(
        `Idempotency-Key '${key}' was used for another call${task}: a retry must repeat the same tool and arguments, ` +
          'and a new call needs a new key',
        namesTask === true ? { taskId: existing.taskId } : undefined,
      );
    }
    if (input.parent) {
      throw new LocalError(
        LocalErrorCode.TaskEnded,
        `Child task ${existing.taskId} (call '${input.parent.key}') was deleted before its parent ended`,
        { taskId: existing.taskId },
      );
    }
    if (replaced) {
      throw new UnavailableError(
        `Task ${existing.taskId}, which Idempotency-Key '${key}' names, was deleted as it was read: send the call again`,
      );
    }
    // Filed under the key but gone before its expiry (an operator's purge, a call answered synchronously): a new task
    // takes the key over, whatever call it is, in the same step that checks it still names the one found gone.
    const again = await this.#create({ ...input, replaceKeyOf: existing.taskId }, opening);
    if (!('existing' in again)) return again.record;
    return this.#existing(input, again.existing, opening, true);
  }

  /** The refusal of a child call whose key names the child of another call (a replay that would guess). */
  async #otherCall(
    input: CreateTaskInput,
    parent: NonNullable<CreateTaskInput['parent']>,
    childId: string,
  ): Promise<NonDeterministicCallError> {
    const [record, details] = await Promise.all([this.store.get(childId), this.store.details(childId)]);
    return new NonDeterministicCallError(
      parent.taskId,
      parent.key,
      { tool: record?.tool ?? '?', taskId: childId, ...(details ? { arguments: details.arguments } : {}) },
      { tool: input.tool, arguments: input.arguments },
      parent.keyed === true,
    );
  }

  async #create(
    input: CreateTaskInput & { replaceKeyOf?: string; taskId?: string; waiter?: string },
    opening: RequestOpening | undefined,
  ): Promise<{ record: TaskRecord } | { existing: { taskId: string; sameCall: boolean } }> {
    const now = Date.now();
    const record: TaskRecord = {
      taskId: input.taskId ?? randomUUID(),
      kind: input.kind,
      status: TaskStatus.Working,
      statusMessage: input.statusMessage ?? 'The task is queued for a worker.',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: this.#ttlOf(input, now),
      pollInterval: this.timing.pollIntervalMs,
      owner: input.owner,
      sessionId: input.sessionId,
      tool: input.tool,
      ...(input.progressToken !== undefined ? { progressToken: input.progressToken } : {}),
      ...(input.queue !== undefined ? { external: { mode: 'queue' as const, queue: input.queue } } : {}),
      ...(input.trace ? { trace: input.trace } : {}),
      ...(input.parent !== undefined ? { parent: input.parent.taskId } : {}),
      ...(input.resume !== undefined ? { resumedFrom: input.resume.taskId } : {}),
      ...(input.resume?.durable ? { durable: input.resume.durable } : {}),
      ...(input.webhook ? { webhook: input.webhook } : {}),
    };
    const queue = this.#queueFor(input.queue ?? toolQueueName(input.tool));
    const fair = input.queue === undefined ? this.#fairQueue?.orderFor(input.tool, queue, record.owner) : undefined;
    const data: ToolJobData = { taskId: record.taskId, tool: input.tool, arguments: input.arguments };
    if (input.trace) data.trace = input.trace;
    // The job is added by the script that writes its record, in one atomic step (invariant 2): the reconciler never
    // sees the live task without its job. A job of our own tool queues in a fair order (always in a runner) is given
    // its priority there; an external consumer's job (docs/job-contract.md), or one without a fair order, goes onto
    // its queue's wait list in arrival order, as `queue.add` would add it.
    const job =
      input.queue === undefined
        ? scriptedJob(
            fair ? 'prioritized' : 'standard',
            queue,
            input.tool,
            { ...data, owner: record.owner },
            toolJobOptions(record.taskId, input.retrySafe, input.scheduling),
            now,
          )
        : scriptedJob('standard', queue, input.tool, data, externalJobOptions(record.taskId, input.retrySafe), now);
    // withOpening throws for a refused opening: what it answers was opened.
    let created: Extract<Created, { opened: 0 }>;
    try {
      // The request is opened in the same step when its session allows it; an owner at its cap was opened all the
      // same, as was a child its parent refused.
      created = (await withOpening(
        opening,
        (open) =>
          this.store.create({
            record,
            arguments: input.arguments,
            ...(this.limits.maxLiveTasksPerOwner !== undefined
              ? { maxLiveTasksPerOwner: this.limits.maxLiveTasksPerOwner }
              : {}),
            ...(fair ? { fair } : {}),
            job,
            ...(open ? { open } : {}),
            ...(input.requestContext ? { requestContext: input.requestContext } : {}),
            ...(input.waiter !== undefined ? { waiter: input.waiter } : {}),
            ...(input.filed !== undefined ? { filed: input.filed } : {}),
            maxChildren: this.#maxChildren,
            ...durableGroups(this.store, input, this.#maxChildren),
          }),
        (error) => error instanceof LocalError,
      )) as Extract<Created, { opened: 0 }>;
    } catch (error) {
      if (!(error instanceof LocalError)) {
        // The step failed, or its answer was lost: a script that fails keeps what it wrote before, so the record
        // may be there without its job. Removed; a job left without its record is skipped by the worker that takes
        // it (an external consumer's runs, and its outcome finds no task to settle).
        await this.#unwrite(record, input.filed);
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
    // Nothing was written: the task named is answered. Or the job was added with the record.
    if (created.existing) return { existing: created.existing };
    return { record };
  }

  /** Removes what a create wrote for a task left without its job: the record and a plain call's entry (`filed`). */
  async #unwrite(record: TaskRecord, filed: string | undefined): Promise<void> {
    await Promise.all([
      this.store.delete(record).catch(() => undefined),
      filed !== undefined
        ? new SessionCalls(this.publisher, this.store.keys).forget(record.sessionId, filed).catch(() => undefined)
        : undefined,
    ]);
  }

  /** The ttl granted (T-CREATE-2), within what is left of `expiresBy` (a child's parent's expiry). */
  #ttlOf(input: CreateTaskInput, now: number): number {
    const granted = this.grantTtl(input.requestedTtl);
    if (input.expiresBy === undefined) return granted;
    const left = input.expiresBy - now;
    if (left < this.timing.minTtlMs) {
      throw new LocalError(
        LocalErrorCode.TaskEnded,
        `The parent task expires in ${Math.max(0, left)} ms: too soon to start a child task`,
      );
    }
    return Math.min(granted, left);
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
    return (await this.getOwnedSince(taskId, owner, options)).record;
  }

  /**
   * getOwned that, with `sinceOf` (a session id), also answers where that session's event stream stands for an
   * unfinished task of the session (`since`: where an answer stream of the task starts), read in the same step.
   */
  async getOwnedSince(
    taskId: string,
    owner: string,
    options: { watch?: boolean; opening?: RequestOpening; sinceOf?: string },
  ): Promise<{ record: TaskRecord; since?: string }> {
    const watcher = options.watch ? this.watcherId : undefined;
    // The request is opened in the same step when its session allows it (RequestOpening).
    const { record, since } = await withOpening(options.opening, (open) =>
      this.store.getOwnedOpening(taskId, owner, watcher, open, options.sinceOf),
    );
    return { record: taskOrNotFound(record), ...(since !== undefined ? { since } : {}) };
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
   * The last progress the task's tool reported (`{progress, total?, message?}`, as its job keeps it for operators), or
   * undefined when it reported none or its job is gone: what a task handle's status shows (docs/clients.md).
   */
  async progressOf(record: Pick<TaskRecord, 'taskId' | 'tool' | 'external'>): Promise<unknown> {
    const queue = this.#externalQueue(jobQueueOf(record));
    const raw = await this.publisher.hget(queue.toKey(record.taskId), 'progress');
    if (raw === null) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return undefined;
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
    // Read after the transition too: a child its tool starts from now on is refused (create-task-6.lua checks the
    // parent's status in its step), so every child is either in the set read here or never created.
    await this.cancelChildren(record.taskId, `Cancelled with its parent task ${record.taskId}.`);
    // A parked task (its job removed above) no longer waits, and its parked question is withdrawn: the client is
    // told, as for a question its worker stops waiting for (docs/durable-execution.md, "Waits").
    if (record.wait) {
      const withdrawn = await this.store.waits.abandon(record);
      if (withdrawn !== undefined) {
        await new SessionEvents(this.publisher, this.store.keys, this.store.streams)
          .append(record.sessionId, record.taskId, {
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: withdrawn, reason: 'The task no longer needs the answer.' },
          })
          .catch(() => undefined);
      }
    }
    return {
      ...record,
      status: TaskStatus.Cancelled,
      statusMessage: settlement.statusMessage,
      lastUpdatedAt: moved.lastUpdatedAt,
      outcome: settlement.outcome,
    };
  }

  /**
   * Cancels the task's unfinished child tasks (ctx.callTool) and, through their cancel, theirs: when the task is
   * cancelled, from whichever replica or operator (the children are found in Redis), or when it ends while some still
   * run. Answers how many it cancelled; a child that ended meanwhile is left as it is.
   */
  async cancelChildren(taskId: string, statusMessage: string): Promise<number> {
    const ids = await this.store.durable.children(taskId);
    if (ids.length === 0) return 0;
    let cancelled = 0;
    for (const child of await this.store.records(ids)) {
      if (isTerminal(child.status)) continue;
      try {
        await this.cancel(child, statusMessage);
        cancelled++;
      } catch (error) {
        if (!(error instanceof InvalidStateError) && !(error instanceof TaskNotFoundError)) throw error;
      }
    }
    return cancelled;
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

/** The idempotency key and the parent of a new task, as the create script takes them (docs/durable-execution.md). */
function durableGroups(
  store: TaskStore,
  input: CreateTaskInput & { replaceKeyOf?: string },
  maxChildren: number,
): Partial<Pick<NewTask, 'idempotency' | 'parent' | 'resume'>> {
  const { idempotency, parent, resume, replaceKeyOf } = input;
  const digest = parent ? (parent.digest ?? callDigest(input.tool, input.arguments)) : '';
  return {
    ...(idempotency
      ? { idempotency: { ...idempotency, ...(replaceKeyOf !== undefined ? { replace: replaceKeyOf } : {}) } }
      : {}),
    ...(parent
      ? {
          parent: {
            taskId: parent.taskId,
            field: store.durable.childField(parent.key),
            attempt: parent.attempt,
            maxEntries: parent.maxEntries,
            maxChildren,
            digest,
            facts: store.durable.callFacts({ tool: input.tool, digest, attempt: parent.attempt, at: Date.now() }),
          },
        }
      : {}),
    ...(resume ? { resume: { taskId: resume.taskId, drop: resume.drop } } : {}),
  };
}

/** A plain call's record read by a task method answers as a missing task does: the caller cannot tell them apart. */
function taskOrNotFound(record: TaskRecord | undefined): TaskRecord {
  if (!record || record.kind !== 'task') throw new TaskNotFoundError();
  return record;
}
