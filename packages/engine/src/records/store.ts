// The task records in Redis, the one owner of a task's keys and hash fields: creation, reads, atomic status
// transitions, listing, deletion. Everything else (api, workers, operators, the janitor) asks this store.
import {
  isTaskStatus,
  isTerminal,
  LocalError,
  LocalErrorCode,
  sourcesOf,
  TaskKind,
  TaskStatus,
  WaitKind,
  type ExternalRef,
  type Outcome,
  type Settlement,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { KeySpace } from '../keys.ts';
import { decodeCursor, encodeCursor, indexMember, taskIdOf } from './list-cursor.ts';
import { jobQueueOf } from '../queue.ts';
import type { RedisClient } from '../redis.ts';
import { type RequestContextRecord, requestContextFields } from '../request-context.ts';
import type { Opened, OpeningCall } from '../request-opening.ts';
import {
  type FairOrderCall,
  type IdempotencyCall,
  type ParentCall,
  type ResumeCall,
  RedisScripts,
  type ScriptedJob,
} from '../scripts.ts';
import {
  attemptsOf,
  decodeExternal,
  decodeHistory,
  decodeRecord,
  decodeSummary,
  encodeExpiryEntry,
  encodeRecord,
  initialHistory,
  kindOf,
  SUMMARY_EXTRAS,
  SUMMARY_FIELDS,
  type AttemptEntry,
  type HistoryEntry,
  type SummaryExtra,
  type TaskSummary,
} from './codec.ts';
import { DurableStore, durableRefusal, resumeRefusal } from './durable.ts';
import { TaskIndexes } from './indexes.ts';
import { TaskKeys } from './keys.ts';
import { WaitStore } from './waits.ts';
import { WebhookOutbox } from './webhooks.ts';

export type TransitionResult =
  /** `durable`: from the move that starts an attempt (beginAttempt), whether the task keeps durable state. */
  | { ok: true; status: TaskStatus; lastUpdatedAt: number; changed: boolean; durable?: boolean }
  | { ok: false; reason: 'missing' }
  | { ok: false; reason: 'rejected'; current: TaskStatus }
  /** A later attempt of the task's job has started (`attempt`): this one may no longer move it. */
  | { ok: false; reason: 'stale'; current: TaskStatus; attempt: number }
  /** The record is no longer what the caller read (`unchangedSince`). */
  | { ok: false; reason: 'changed'; current: TaskStatus };

/** What may come with a move besides its target status. */
export interface TransitionChange {
  statusMessage?: string;
  outcome?: Outcome;
  /** The statuses the move may start from (default: the state machine's sources of the target). */
  from?: readonly TaskStatus[];
  /**
   * One of the task's input requests was asked (1) or answered or abandoned (-1): the set of outstanding requests
   * changes in the same step, and the status moves only when it says so (first request: to input_required; last
   * one: back to working).
   */
  input?: { requestId: string; delta: 1 | -1 };
  /**
   * The attempt of the task's job making the move (a worker's moves): refused once a later attempt has started.
   * Moves from outside a worker (cancel, reconciliation, callbacks) carry none and are not fenced.
   */
  attempt?: number;
  /** The record as the caller read it: the move is refused when the record changed since (compare-and-set). */
  unchangedSince?: Pick<TaskRecord, 'lastUpdatedAt' | 'external'>;
  /** The attempt the move is part of (a worker's start, note or settlement): its history entry carries it. */
  run?: AttemptRun;
}

/** How an attempt ended, as its history entry says it (besides a terminal status that ended it). */
export const AttemptEnding = {
  Completed: 'completed',
  Failed: 'failed',
  /** Its worker stopped without ending it: killed, out of memory, cut off from Redis, or its job lock lost. */
  Lost: 'lost',
  /** Its worker shut down and gave the job back without spending an attempt. */
  HandedBack: 'handed-back',
  /** Its tool parked the job on a durable wait (a sleep, an event, the client's answer): a wake starts the next. */
  Parked: 'parked',
} as const;
export type AttemptEnding = (typeof AttemptEnding)[keyof typeof AttemptEnding];

/** An attempt of the task's job as a move records it in its history entry (transition-8.lua `run`). */
export interface AttemptRun {
  /** The job's start count (BullMQ's attemptsStarted), the number that fences the attempt's moves. */
  attempt: number;
  /** The name of the worker running it. */
  worker: string;
  /** Epoch ms; absent: the move's time. */
  startedAt?: number;
  /** Absent while it runs. */
  ending?: AttemptEnding;
}

/** What a settlement or a note of a worker or the reconciler carries for the transition's guards. */
/** An attempt of a task's job under way, as its record notes it while tracing is on (markAttemptStarted). */
export interface AttemptStart {
  attempt: number;
  /** Epoch ms. */
  at: number;
  /** The name of the worker running it. */
  worker: string;
}

export type TransitionGuard = Pick<TransitionChange, 'attempt' | 'unchangedSince' | 'run'>;

export interface NewTask {
  record: TaskRecord;
  arguments: unknown;
  /** The most unfinished tasks (and plain calls) the owner may have, this one included; absent: no cap. */
  maxLiveTasksPerOwner?: number;
  /** The tool's fair order: the task's job gets its priority in the same step (FairQueue.orderFor). */
  fair?: FairOrderCall;
  /** Opens the creating request in the same step (RequestOpening): nothing is written when that refuses it. */
  open?: OpeningCall;
  /**
   * The task's job in one of our tool queues (bullmq/job-layout.ts scriptedJob), added in the same step with the fair priority
   * (requires `fair`): no record without its job. A task created without one has its job added by the caller.
   */
  job?: ScriptedJob;
  /** A 2026-07-28 request's context, stored with the record (only when the task is admitted) and expiring with it. */
  requestContext?: RequestContextRecord;
  /** The call's idempotency key (docs/durable-execution.md): a live task filed under it is answered instead. */
  idempotency?: Omit<IdempotencyCall, 'keys'>;
  /** The task whose running tool starts this one (ctx.callTool): the child is filed with it, once per call key. */
  parent?: Omit<ParentCall, 'keys'> & { taskId: string };
  /** The failed task this one continues (`mcpt retry --resume`): its durable state is copied in the same step. */
  resume?: Omit<ResumeCall, 'keys'>;
  /** The most child tasks it may start, kept on its record (a child gets its parent's instead). */
  maxChildren?: number;
  /**
   * An api replica that waits for the task from its creation on (TaskService.watcherId): named among the record's
   * waiters by the step that writes it, as getOwned with a watcher would, so that its first change wakes the replica
   * without a read first (a plain call's answer).
   */
  waiter?: string;
  /**
   * A plain call's request id as JSON: the call is filed under it in its session's calls hash (what
   * notifications/cancelled names it by, sessions/session-calls.ts) by the step that writes it.
   */
  filed?: string;
}

/** What creating a task came to, once its request was opened. */
export type Created =
  | { opened: Exclude<Opened, 0> }
  /** Written; `priority`: its job's, with a fair order. */
  | { opened: 0; existing?: undefined; priority?: number }
  /** Nothing written: the idempotency key (`sameCall`: for the same call) or the parent's call key names this task. */
  | { opened: 0; existing: { taskId: string; sameCall: boolean } };

/** What TaskStore.delete needs of a record: its keys, index member and expiry entries follow from these. */
export type DeletedRecord = Pick<TaskRecord, 'taskId' | 'owner' | 'createdAt' | 'kind'> &
  Partial<Pick<TaskRecord, 'tool' | 'external'>> & { sessionId?: string };

/** A record's index member, and the forms of its expiry entry to remove with it. */
function expiryEntriesOf(record: DeletedRecord): { member: string; entries: string[] } {
  const member = indexMember(record.createdAt, record.taskId);
  // Without the sessionId (or the tool) the expiry entry stays; the janitor's later pass over it finds nothing
  // left but events.
  const { taskId, owner, kind, sessionId, tool, external } = record;
  // The forms of older versions (without the job's queue), and the entry this version writes.
  const entries = [encodeExpiryEntry({ taskId, owner, kind }, member)];
  if (sessionId !== undefined) entries.push(encodeExpiryEntry({ taskId, owner, kind, sessionId }, member));
  if (tool !== undefined) {
    const queue = jobQueueOf({ tool, ...(external !== undefined ? { external } : {}) });
    entries.push(
      encodeExpiryEntry({ taskId, owner, kind, ...(sessionId !== undefined ? { sessionId } : {}), queue }, member),
    );
  }
  return { member, entries };
}

/** The owner already has as many unfinished tasks as allowed (MAX_TASKS_PER_OWNER). */
export class OwnerTaskLimitError extends LocalError {
  constructor(owner: string, limit: number) {
    super(LocalErrorCode.OwnerTaskLimit, `Owner already has ${limit} unfinished tasks`, { owner, limit });
  }
}

export interface TaskPage {
  tasks: TaskRecord[];
  nextCursor?: string;
}

/** Extra data kept beside the record for the worker and operators. */
export interface TaskDetails {
  arguments: unknown;
  progressToken?: string | number;
}

/**
 * Identifies a task for a transition: its session's event stream receives the status notification, and its
 * owner's set of unfinished tasks loses it when it ends.
 */
export type TaskRef = Pick<TaskRecord, 'taskId' | 'sessionId' | 'owner'>;

export interface SessionStreamOptions {
  /** A session's event stream expires this long after its last event (as the session itself). */
  idleMs: number;
  /** Events kept per session for resumption (approximate, Redis MAXLEN ~). */
  maxLength: number;
}

export const DEFAULT_SESSION_STREAM: SessionStreamOptions = { idleMs: 3_600_000, maxLength: 1000 };

/** What a transition needs of the webhook settings (docs/webhooks.md): WEBHOOK_MAX_PENDING. */
export interface TransitionWebhooks {
  /** The most deliveries a task's outbox holds; a change of status past it is not delivered (the terminal one is). */
  maxPending: number;
}

export const DEFAULT_TRANSITION_WEBHOOKS: TransitionWebhooks = { maxPending: 100 };

const MAX_WITHDRAW_ROUNDS = 5;

/** A record with what operators inspect besides it. */
export interface StoredTask {
  record: TaskRecord;
  arguments: unknown;
  history: HistoryEntry[];
  /** The attempts of the task's job, from its history: who ran each, from when, how it ended (oldest first). */
  attempts: AttemptEntry[];
}

export type MarkResult = { ok: true } | { ok: false; status: TaskStatus | undefined };

export class TaskStore {
  readonly #redis: RedisClient;
  readonly #scripts: RedisScripts;
  readonly #tasks: TaskKeys;
  readonly #observers: TaskObserver[] = [];
  /** The sets tasks belong to: for operators' listings, the reconciler and the janitor. */
  readonly indexes: TaskIndexes;
  /** What running tools keep beside their records: checkpoints, step results, child tasks. */
  readonly durable: DurableStore;
  /** What parked tasks wait for, and the events sent to tasks (docs/durable-execution.md, "Waits"). */
  readonly waits: WaitStore;
  /** The tasks' webhook deliveries queued by their transitions (docs/webhooks.md). */
  readonly webhooks: WebhookOutbox;

  constructor(
    redis: RedisClient,
    /** The runner's other keys: the channels and session event streams a transition writes to. */
    readonly keys: KeySpace,
    readonly streams: SessionStreamOptions = DEFAULT_SESSION_STREAM,
    readonly webhookLimits: TransitionWebhooks = DEFAULT_TRANSITION_WEBHOOKS,
  ) {
    this.#redis = redis;
    this.#scripts = RedisScripts.on(redis);
    this.#tasks = new TaskKeys(keys);
    this.indexes = new TaskIndexes(redis, this.#tasks);
    this.durable = new DurableStore(redis, this.#tasks);
    this.waits = new WaitStore(redis, this.#tasks, keys);
    this.webhooks = new WebhookOutbox(redis, this.#tasks, keys.webhookCounters());
  }

  /**
   * Writes the record, its owner-index entry and its expiry in one script, after admitting the task under the
   * owner's cap when there is one (a refused task leaves no trace, its job included). Invariant 2: with `job`, the
   * task's job is added in the same step. With `fair`, answers the priority of the task's job (undefined without);
   * with `open`, how opening the request went (`opened`, 0 when it may proceed; otherwise nothing was written).
   */
  async create(task: NewTask): Promise<Created> {
    const {
      record,
      arguments: args,
      maxLiveTasksPerOwner,
      fair,
      open,
      job,
      requestContext,
      idempotency,
      parent,
      resume,
      maxChildren,
      waiter,
      filed,
    } = task;
    const expiresAt = record.createdAt + record.ttl;
    const member = indexMember(record.createdAt, record.taskId);
    const reply = await this.#scripts.createTask({
      keys: {
        record: this.#tasks.record(record.taskId),
        live: this.#tasks.live(),
        allTasks: this.#tasks.allTasks(),
        expiries: this.#tasks.expiries(),
        ownerIndex: this.#tasks.ownerIndex(record.owner),
        ownerLive: this.#tasks.ownerLive(record.owner),
      },
      taskId: record.taskId,
      expiresAt,
      now: record.lastUpdatedAt,
      maxLive: maxLiveTasksPerOwner,
      member,
      listed: record.kind === TaskKind.Task,
      expiryEntry: encodeExpiryEntry({ ...record, queue: jobQueueOf(record) }, member),
      ...(fair ? { fair } : {}),
      ...(open ? { open } : {}),
      ...(job ? { job } : {}),
      ...(requestContext
        ? {
            context: {
              keys: { hash: this.keys.session(requestContext.id) },
              fields: requestContextFields(requestContext),
            },
          }
        : {}),
      ...(idempotency ? { idempotency: { ...idempotency, keys: this.#idempotencyKeys(record.owner) } } : {}),
      ...(parent ? { parent: { ...parent, keys: this.durable.parentKeys(parent.taskId) } } : {}),
      ...(resume ? { resume: { ...resume, keys: this.durable.resumeKeys(resume.taskId, record.taskId) } } : {}),
      ...(filed !== undefined
        ? { filed: { keys: { calls: this.keys.sessionCalls(record.sessionId) }, field: filed } }
        : {}),
      fields: {
        ...encodeRecord(record),
        arguments: JSON.stringify(args ?? {}),
        history: initialHistory(record),
        ...(maxChildren !== undefined ? { maxChildren: String(maxChildren) } : {}),
        // The `waiters` field as include/waiters.lua writes it.
        ...(waiter !== undefined ? { waiters: `,${waiter},` } : {}),
      },
    });
    if (reply.opened !== 0) return { opened: reply.opened };
    switch (reply.verdict) {
      case 'owner-limit':
        throw new OwnerTaskLimitError(record.owner, maxLiveTasksPerOwner ?? 0);
      case 'existing':
        return { opened: 0, existing: { taskId: reply.taskId, sameCall: reply.sameCall } };
      case 'parent-refused':
        throw durableRefusal(parent?.taskId ?? '', reply.reason, reply.detail);
      case 'resume-refused':
        throw resumeRefusal(resume?.taskId ?? '', reply.reason, reply.detail);
      case 'created':
        for (const observer of this.#observers) observer.created?.(record);
        return fair ? { opened: 0, priority: reply.priority } : { opened: 0 };
    }
  }

  #idempotencyKeys(owner: string): IdempotencyCall['keys'] {
    return { entries: this.#tasks.idempotencyKeys(owner), order: this.#tasks.idempotencyOrder(owner) };
  }

  /** Adds an observer of creations and terminal transitions made through this store (metrics). */
  observe(observer: TaskObserver): void {
    this.#observers.push(observer);
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    return decodeRecord(await this.#redis.hgetall(this.#tasks.record(taskId)));
  }

  /** The record with its arguments and status history (operators' inspection). */
  async inspect(taskId: string): Promise<StoredTask | undefined> {
    const hash = await this.#redis.hgetall(this.#tasks.record(taskId));
    const record = decodeRecord(hash);
    if (!record) return undefined;
    return {
      record,
      arguments: JSON.parse(hash['arguments'] ?? '{}') as unknown,
      history: decodeHistory(hash['history']),
      attempts: attemptsOf(hash['history']),
    };
  }

  /** The ids of the task's outstanding input requests (elicitation, sampling) as the record counts them. */
  pendingInputIds(taskId: string): Promise<string[]> {
    return this.#redis.smembers(this.#tasks.inputs(taskId));
  }

  /** The records of many tasks in one round trip, in order; the missing and expired are left out. */
  async records(taskIds: readonly string[]): Promise<TaskRecord[]> {
    return (await this.#records(taskIds)).filter((record) => record !== undefined);
  }

  /**
   * How many tasks ended, in one round trip (undefined where the record is gone): the status, and for a terminal one
   * when it ended and the size of its stored outcome (bytes of JSON), read without the outcome itself.
   */
  async endings(
    taskIds: readonly string[],
  ): Promise<({ status: TaskStatus; endedAt?: number; bytes?: number } | undefined)[]> {
    if (taskIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of taskIds) {
      pipeline.hmget(this.#tasks.record(id), 'status', 'lastUpdatedAt');
      pipeline.hstrlen(this.#tasks.record(id), 'outcome');
    }
    const replies = (await pipeline.exec()) ?? [];
    return taskIds.map((_, i) => {
      const [status, lastUpdatedAt] = (replies[2 * i]?.[1] ?? []) as (string | null)[];
      if (!isTaskStatus(status)) return undefined;
      if (!isTerminal(status)) return { status };
      const bytes = Number(replies[2 * i + 1]?.[1] ?? 0);
      return { status, endedAt: Number(lastUpdatedAt), ...(bytes > 0 ? { bytes } : {}) };
    });
  }

  /**
   * Summaries of many tasks in one round trip (undefined where the record is gone): status, kind, creation and ttl,
   * plus `extras`. Cheaper than records when most are filtered out or only counted.
   */
  async summaries(
    taskIds: readonly string[],
    extras: readonly SummaryExtra[] = SUMMARY_EXTRAS,
  ): Promise<(TaskSummary | undefined)[]> {
    if (taskIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of taskIds) pipeline.hmget(this.#tasks.record(id), ...SUMMARY_FIELDS, ...extras);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, values]) =>
      error ? undefined : decodeSummary(values as (string | null)[] | undefined, extras),
    );
  }

  /**
   * The record when `owner` owns it; undefined when it is missing, expired or someone else's. Both misses do the
   * same work and send nothing back, so they cannot be told apart by the answer or its timing (T-SEC-1). With
   * `watcher` (TaskService.watcherId), an unfinished task's changes are published to that replica from now on.
   */
  async getOwned(taskId: string, owner: string, watcher?: string): Promise<TaskRecord | undefined> {
    return (await this.getOwnedOpening(taskId, owner, watcher)).record;
  }

  /**
   * A record read again by a waiter whose request has read it through getOwned already (owner checked, replica
   * registered): one HGETALL instead of getOwned's script. The owner cannot change, so a mismatch can only be a
   * missing record. Only an unfinished task that no longer names `watcher` among its waiters (a record keeps the
   * last few: get-owned-1.lua) goes through getOwned again, which names it again.
   */
  async reread(taskId: string, owner: string, watcher: string): Promise<TaskRecord | undefined> {
    const hash = await this.#redis.hgetall(this.#tasks.record(taskId));
    if (hash['owner'] !== owner) return undefined;
    const record = decodeRecord(hash);
    if (record && !isTerminal(record.status) && !(hash['waiters'] ?? '').includes(`,${watcher},`)) {
      return this.getOwned(taskId, owner, watcher);
    }
    return record;
  }

  /**
   * getOwned that also opens the request in its step (RequestOpening): no record is read when that refuses it. With
   * `sinceOf` (a session id), an unfinished task of that session answers where the session's event stream stands
   * (`since`, the id an answer stream starts after), read in the same step.
   */
  async getOwnedOpening(
    taskId: string,
    owner: string,
    watcher?: string,
    open?: OpeningCall,
    sinceOf?: string,
  ): Promise<{ opened: Opened; record: TaskRecord | undefined; since?: string }> {
    const { opened, fields, since } = await this.#scripts.getOwned({
      keys: { record: this.#tasks.record(taskId) },
      owner,
      ...(watcher !== undefined ? { watcher } : {}),
      ...(open ? { open } : {}),
      ...(sinceOf !== undefined
        ? { since: { keys: { events: this.keys.sessionEvents(sinceOf) }, session: sinceOf } }
        : {}),
    });
    return { opened, record: decodeRecord(fields), ...(since !== undefined ? { since } : {}) };
  }

  async details(taskId: string): Promise<TaskDetails | undefined> {
    const [args, token] = await this.#redis.hmget(this.#tasks.record(taskId), 'arguments', 'progressToken');
    if (args === null || args === undefined) return undefined;
    const details: TaskDetails = { arguments: JSON.parse(args) as unknown };
    if (token) details.progressToken = JSON.parse(token) as string | number;
    return details;
  }

  /** Current statuses of many tasks in one round trip (undefined where the record is gone). */
  async statuses(taskIds: readonly string[]): Promise<(TaskStatus | undefined)[]> {
    if (taskIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of taskIds) pipeline.hget(this.#tasks.record(id), 'status');
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([, value]) => (isTaskStatus(value) ? value : undefined));
  }

  /**
   * Moves a task along the state machine; exactly one of racing transitions out of a status wins. See
   * TransitionChange for the input-request count, the attempt fence and the compare-and-set that can come with it.
   */
  /** `to` undefined: the status stays (a note; `change.from` says which statuses it may be). */
  async transition(
    task: TaskRef,
    to: TaskStatus | undefined,
    change: TransitionChange = {},
  ): Promise<TransitionResult> {
    const reply = await this.#transition(task, to, change);
    // Only a move that starts an attempt asks for the requests to withdraw.
    if ('verdict' in reply) throw new Error('transition: unexpected withdrawal');
    return reply;
  }

  settle(task: TaskRef, settlement: Settlement, guard: TransitionGuard = {}): Promise<TransitionResult> {
    return this.transition(task, settlement.status, { ...settlement, ...guard });
  }

  /** Changes the statusMessage of a task that is still `status`, without moving it (and moves lastUpdatedAt). */
  note(
    task: TaskRef,
    status: TaskStatus,
    statusMessage: string,
    guard: TransitionGuard = {},
  ): Promise<TransitionResult> {
    return this.transition(task, status, { statusMessage, from: [status], ...guard });
  }

  /**
   * Ends an attempt without moving the task: its worker is gone (lost) or gave the job back (handed back). The status
   * stays; the statusMessage says what happened, with its history entry and status notification. Fenced by the
   * attempt: refused (`stale`) once a later attempt has started, whose own start says more.
   */
  endAttempt(
    task: TaskRef,
    run: AttemptRun & { ending: AttemptEnding },
    statusMessage: string,
  ): Promise<TransitionResult> {
    return this.transition(task, undefined, {
      statusMessage,
      from: [TaskStatus.Working, TaskStatus.InputRequired],
      attempt: run.attempt,
      run,
    });
  }

  /**
   * Starts `attempt` of the task's job: from then on earlier attempts can no longer move the task. The input
   * requests earlier attempts left outstanding (a worker died waiting for the client) are withdrawn in the same
   * step: deleted, so that a late answer is refused as unknown; the client told with `notice(requestId)`
   * (notifications/cancelled) on the session's stream; the count reset; and the task back to `working` with
   * `statusMessage`, as any move, with its history entry and status notification.
   */
  async beginAttempt(
    task: TaskRef,
    attempt: number,
    statusMessage: string,
    notice: (requestId: string) => Record<string, unknown>,
    run?: Omit<AttemptRun, 'attempt' | 'ending'>,
  ): Promise<TransitionResult> {
    const change: TransitionChange = {
      statusMessage,
      from: [TaskStatus.Working, TaskStatus.InputRequired],
      attempt,
      ...(run ? { run: { ...run, attempt } } : {}),
    };
    let withdraw: string[] = [];
    // The script names the outstanding requests when they are not those given; they change between two calls
    // only while an earlier attempt still asks, so a few rounds settle it.
    for (let round = 0; round < MAX_WITHDRAW_ROUNDS; round++) {
      const reply = await this.#transition(task, TaskStatus.Working, change, withdraw, notice);
      if (!('verdict' in reply)) return reply;
      withdraw = reply.requestIds;
    }
    throw new LocalError(
      LocalErrorCode.AttemptNotStarted,
      `Attempt ${attempt} could not withdraw the earlier input requests`,
      {
        taskId: task.taskId,
        attempt,
      },
    );
  }

  async #transition(
    task: TaskRef,
    to: TaskStatus | undefined,
    change: TransitionChange,
    withdraw?: readonly string[],
    notice?: (requestId: string) => Record<string, unknown>,
  ): Promise<TransitionResult | { verdict: 'withdraw'; requestIds: string[] }> {
    const { taskId, sessionId, owner } = task;
    const { unchangedSince } = change;
    const reply = await this.#scripts.transition({
      keys: {
        record: this.#tasks.record(taskId),
        live: this.#tasks.live(),
        events: this.keys.sessionEvents(sessionId),
        ownerLive: this.#tasks.ownerLive(owner),
        inputs: this.#tasks.inputs(taskId),
        sessionInputs: this.keys.sessionInputs(sessionId),
        webhookOutbox: this.#tasks.webhookOutbox(taskId),
        webhooksDue: this.#tasks.webhooksDue(),
        withdrawn: (withdraw ?? []).map((requestId) => this.keys.inputRequest(requestId)),
      },
      taskId,
      to,
      from: change.from ?? (to !== undefined ? sourcesOf(to) : [TaskStatus.Working, TaskStatus.InputRequired]),
      now: Date.now(),
      statusMessage: change.statusMessage,
      outcome: change.outcome ? JSON.stringify(change.outcome) : undefined,
      terminal: to !== undefined && isTerminal(to),
      waiterChannels: this.keys.replicaChannel(''),
      sessionChannel: this.keys.sessionChannel(sessionId),
      stream: this.streams,
      input: change.input,
      attempt: change.attempt,
      begin: withdraw
        ? { withdraw: withdraw.map((requestId) => ({ requestId, notice: JSON.stringify(notice?.(requestId)) })) }
        : undefined,
      unchangedSince: unchangedSince
        ? { lastUpdatedAt: unchangedSince.lastUpdatedAt, external: unchangedSince.external !== undefined }
        : undefined,
      run: change.run,
      webhooks: { maxPending: this.webhookLimits.maxPending, channel: this.keys.webhooksChannel() },
    });
    switch (reply.verdict) {
      case 'ok':
      case 'unchanged':
        if (reply.verdict === 'ok' && to !== undefined && isTerminal(to))
          this.#finished(task, to, reply.lastUpdatedAt).catch(() => undefined);
        return {
          ok: true,
          status: reply.status,
          lastUpdatedAt: reply.lastUpdatedAt,
          changed: reply.verdict === 'ok',
          ...(reply.verdict === 'ok' && reply.durable !== undefined ? { durable: reply.durable } : {}),
        };
      case 'missing':
        return { ok: false, reason: 'missing' };
      case 'stale':
        return { ok: false, reason: 'stale', current: reply.current, attempt: reply.attempt };
      case 'changed':
        return { ok: false, reason: 'changed', current: reply.current };
      case 'rejected':
        return { ok: false, reason: 'rejected', current: reply.current };
      case 'withdraw':
        return reply;
    }
  }

  /**
   * One page of an owner's tasks, newest first. Cost is O(log N + page) whatever N is: members are read by lexical
   * range and the records in one pipeline.
   */
  async list(owner: string, cursor: string | undefined, pageSize: number): Promise<TaskPage> {
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const index = { owner };
    const members = await this.indexes.members(index, {
      from: after === undefined ? '+' : `(${after}`,
      to: '-',
      count: pageSize + 1,
      reverse: true,
    });
    const pageMembers = members.slice(0, pageSize);
    const records = await this.#records(pageMembers.map(taskIdOf));
    const tasks = records.filter((record) => record !== undefined);
    // Expired between janitor runs: drop from the index now rather than list a task tasks/get would not find.
    await this.indexes.forget(
      index,
      pageMembers.filter((_, i) => records[i] === undefined),
    );
    const last = pageMembers[pageMembers.length - 1];
    return members.length > pageSize && last !== undefined ? { tasks, nextCursor: encodeCursor(last) } : { tasks };
  }

  /** Deletes a record and its index entries at once (a plain call's record once its answer is sent). */
  async delete(record: DeletedRecord): Promise<void> {
    const { member, entries } = expiryEntriesOf(record);
    await this.indexes.deleteTask({ taskId: record.taskId, owner: record.owner, member }, entries);
  }

  /**
   * A plain call's record read again by its waiter (as reread: `watcher` is named among its waiters, through
   * getOwned when it is not), and once the call has ended deleted in the same step (take-ended-13.lua), with its
   * entry `callsField` in the session's calls hash: what `delete` and the entry's HDEL would do after the read, in
   * one round trip. Undefined when the record is missing or not `record.owner`'s.
   */
  async takeEnded(
    record: DeletedRecord & { sessionId: string },
    watcher: string,
    callsField?: string,
  ): Promise<{ record: TaskRecord | undefined; deleted: boolean }> {
    const { taskId, owner } = record;
    const { member, entries } = expiryEntriesOf(record);
    const tasks = this.#tasks;
    const { deleted, fields } = await this.#scripts.takeEnded({
      keys: {
        record: tasks.record(taskId),
        inputs: tasks.inputs(taskId),
        durable: tasks.durable(taskId),
        children: tasks.children(taskId),
        signals: tasks.signals(taskId),
        webhookOutbox: tasks.webhookOutbox(taskId),
        webhookLog: tasks.webhookLog(taskId),
        live: tasks.live(),
        allTasks: tasks.allTasks(),
        ownerIndex: tasks.ownerIndex(owner),
        ownerLive: tasks.ownerLive(owner),
        expiries: tasks.expiries(),
        calls: this.keys.sessionCalls(record.sessionId),
        waiting: {
          sleep: tasks.waiting(WaitKind.Sleep),
          event: tasks.waiting(WaitKind.Event),
          input: tasks.waiting(WaitKind.Input),
        },
      },
      owner,
      taskId,
      member,
      entries,
      ...(callsField !== undefined ? { field: callsField } : {}),
    });
    const current = decodeRecord(fields);
    if (deleted || !current || isTerminal(current.status)) return { record: current, deleted };
    if ((fields?.['waiters'] ?? '').includes(`,${watcher},`)) return { record: current, deleted };
    return { record: await this.getOwned(taskId, owner, watcher), deleted: false };
  }

  /**
   * Makes a live plain call a task (a task handle, docs/clients.md): from now on it is read, listed and kept as a task
   * until its expiry. `handed` also for a record an earlier hand-out made a task; `ended` when the call ended first
   * (nothing changed: its result is the answer); `missing` when it is gone, or not `owner`'s.
   */
  async handOut(
    record: Pick<TaskRecord, 'taskId' | 'owner' | 'createdAt' | 'ttl'>,
  ): Promise<{ verdict: 'handed' | 'ended' | 'missing'; status?: TaskStatus }> {
    const { verdict, status } = await this.#scripts.handOut({
      keys: { record: this.#tasks.record(record.taskId), ownerIndex: this.#tasks.ownerIndex(record.owner) },
      owner: record.owner,
      member: indexMember(record.createdAt, record.taskId),
      expiresAt: record.createdAt + record.ttl,
    });
    return isTaskStatus(status) ? { verdict, status } : { verdict };
  }

  /** Records on a live task where its external work runs (atomic with the status check; never creates a record). */
  async markExternal(task: Pick<TaskRecord, 'taskId'>, ref: ExternalRef): Promise<MarkResult> {
    const { verdict, status } = await this.#scripts.markExternal({
      keys: { record: this.#tasks.record(task.taskId) },
      ref: JSON.stringify(ref),
    });
    if (verdict === 'ok') return { ok: true };
    return { ok: false, status: isTaskStatus(status) ? status : undefined };
  }

  /**
   * Notes in the record that `start.attempt` of the task's job began (while tracing is on), and takes the earlier
   * attempts still noted: their worker never ended them (killed mid-attempt), so the caller puts them in the trace.
   */
  markAttemptStarted(taskId: string, start: AttemptStart): Promise<AttemptStart[]> {
    const { attempt, at, worker } = start;
    return this.#scripts.noteAttempt({ keys: { record: this.#tasks.record(taskId) }, attempt, start: { at, worker } });
  }

  /** Notes that the attempt ended: its worker ended its span. */
  async markAttemptEnded(taskId: string, attempt: number): Promise<void> {
    await this.#scripts.noteAttempt({ keys: { record: this.#tasks.record(taskId) }, attempt });
  }

  /** Takes every attempt still noted (the reconciler, settling a task whose job can no longer run). */
  takeUnendedAttempts(taskId: string): Promise<AttemptStart[]> {
    return this.#scripts.noteAttempt({ keys: { record: this.#tasks.record(taskId) } });
  }

  /** The task's external reference as stored now (also on a terminal record, until it expires). */
  async externalRef(taskId: string): Promise<ExternalRef | undefined> {
    return decodeExternal(await this.#redis.hget(this.#tasks.record(taskId), 'external'));
  }

  async #records(taskIds: readonly string[]): Promise<(TaskRecord | undefined)[]> {
    if (taskIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of taskIds) pipeline.hgetall(this.#tasks.record(id));
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([, hash]) => decodeRecord(hash as Record<string, string>));
  }

  /** Tells observers about a terminal transition this process won; reads what they need only when there are some. */
  async #finished(ref: TaskRef, status: TaskStatus, at: number): Promise<void> {
    if (!this.#observers.some((observer) => observer.finished)) return;
    // The caller usually holds the whole record (a worker settling its task, the api cancelling one): no read then.
    const { taskId, owner, tool, kind, createdAt } = ref as Partial<TaskRecord> & TaskRef;
    if (owner !== undefined && tool !== undefined && kind !== undefined && createdAt !== undefined) {
      for (const observer of this.#observers) observer.finished?.({ taskId, owner, tool, kind, createdAt }, status, at);
      return;
    }
    const stored = await this.#redis.hmget(this.#tasks.record(taskId), 'tool', 'kind', 'createdAt', 'owner');
    const task = {
      taskId,
      owner: stored[3] ?? '',
      tool: stored[0] ?? '',
      kind: kindOf(stored[1]),
      createdAt: Number(stored[2]),
    };
    for (const observer of this.#observers) observer.finished?.(task, status, at);
  }
}

/** Sees what goes through one TaskStore; each terminal transition is won by exactly one process. */
export interface TaskObserver {
  created?: (record: TaskRecord) => void;
  finished?: (
    task: Pick<TaskRecord, 'taskId' | 'owner' | 'tool' | 'kind' | 'createdAt'>,
    status: TaskStatus,
    at: number,
  ) => void;
}
