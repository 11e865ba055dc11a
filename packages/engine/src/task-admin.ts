// The operators' view of every task, across owners: counts, filtered listing, inspection with status history and
// job details, purge and retry. Used by the CLI, the admin dashboard and the metrics; it reads the same records,
// indexes and BullMQ jobs as the api and the workers, through the same TaskStore.
import {
  isTerminal,
  LocalError,
  LocalErrorCode,
  JOB_PHASE,
  reconcile,
  TASK_STATUSES,
  TaskKind,
  TaskStatus,
  toWireTask,
  type JobPhase,
  type ObservedJobState,
  type CatalogEntry,
  type Task,
  type TaskRecord,
  type WebhookEvents,
} from '@mcp-tasks/protocol';
import type { Job, Queue } from 'bullmq';
import type { CatalogRefusal, ToolCatalog } from './catalog.ts';
import { parkedOverview, waitsView, type ParkedOverview, type WaitsView } from './parked-view.ts';
import { withServedStatus } from './unserved.ts';
import type { ExternalQueues } from './external-queues.ts';
import type { GatewayState, UpstreamStatus } from './gateway.ts';
import { decodeCursor, encodeCursor, taskIdOf } from './list-cursor.ts';
import { jobQueueOf, type ToolJobData } from './queue.ts';
import { isExpired, type AttemptEntry, type HistoryEntry, type TaskSummary } from './records/codec.ts';
import { workerOf } from './lost-jobs.ts';
import { isSessionOwnerLabel, ownerLabel, sessionDigest } from './redact.ts';
import type { TaskIndex } from './records/indexes.ts';
import type { TaskStore } from './records/store.ts';
import type { WebhookOutcome, WebhookView } from './records/webhooks.ts';
import type { CreateTaskInput, TaskService } from './task-service.ts';
import type { SchedulingView, ToolSchedulingView } from './tool-limits.ts';

export type { HistoryEntry } from './records/codec.ts';

/**
 * A task as operators see it: the MCP `Task` plus who owns it, what it runs and when it expires. The owner and the
 * session are labels (ownerLabel): a session id is a bearer credential, which no operator's view shows.
 */
export interface OperatorTask extends Task {
  kind: TaskKind;
  tool: string;
  owner: string;
  sessionId: string;
  expiresAt: string;
}

export function operatorTask(record: TaskRecord): OperatorTask {
  const labelled = operatorRecord(record);
  return {
    ...toWireTask(labelled),
    kind: labelled.kind,
    tool: labelled.tool,
    owner: labelled.owner,
    sessionId: labelled.sessionId,
    expiresAt: new Date(labelled.createdAt + labelled.ttl).toISOString(),
  };
}

/** The record with its owner and session as labels (ownerLabel, sessionDigest), for operators' views. */
export function operatorRecord(record: TaskRecord): TaskRecord {
  return {
    ...record,
    owner: ownerLabel(record.owner),
    sessionId: record.sessionId === '' ? '' : sessionDigest(record.sessionId),
    ...(record.webhook ? { webhook: { ...record.webhook, url: withoutQueryValues(record.webhook.url) } } : {}),
  };
}

/**
 * An inspection as operators see it: its record labelled (operatorRecord), and its webhook's URL without the values
 * of its query, where receivers may keep a token of theirs.
 */
export function operatorInspection(inspection: TaskInspection): TaskInspection {
  const { webhook } = inspection;
  return {
    ...inspection,
    record: operatorRecord(inspection.record),
    ...(webhook ? { webhook: { ...webhook, url: withoutQueryValues(webhook.url) } } : {}),
  };
}

/** `https://host/path?token=***`: the query's names kept, their values masked. */
export function withoutQueryValues(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.search === '') return url;
  for (const name of new Set(parsed.searchParams.keys())) parsed.searchParams.set(name, '***');
  return parsed.href.replaceAll('%2A%2A%2A', '***');
}

export interface TaskFilter {
  statuses?: readonly TaskStatus[];
  tool?: string;
  /** The owner, or its label as operators see it (ownerLabel): `session:sha256:...` finds that session's tasks. */
  owner?: string;
  kind?: TaskKind;
  /** Epoch ms: only tasks created at or before. */
  createdBefore?: number;
  /** Epoch ms: only tasks created at or after. */
  createdAfter?: number;
}

export interface AdminPage {
  tasks: TaskRecord[];
  /** Where the next page starts; present whenever index entries are left to examine. */
  nextCursor?: string;
}

export interface JobView {
  state: ObservedJobState;
  /** Our reading of the state (queued, running, ...), the same mapping the reconciler uses. */
  phase: JobPhase;
  attemptsStarted: number;
  attemptsMade: number;
  maxAttempts: number;
  stalledCounter: number;
  /** Name of the worker that took the job last. */
  processedBy?: string;
  addedAt: number;
  processedOn?: number;
  finishedOn?: number;
  progress: unknown;
  failedReason?: string;
}

export interface TaskInspection {
  record: TaskRecord;
  arguments: unknown;
  history: HistoryEntry[];
  /**
   * The attempts of the task's job, oldest first: the worker that ran each, its start and, once over, its end and how
   * it ended (completed, failed, lost with its worker, handed back on shutdown, or the terminal status that ended it).
   */
  attempts: AttemptEntry[];
  /** Undefined once the job is gone: finished jobs are removed, the record keeps the outcome. */
  job?: JobView;
  /** Set when the record and the job disagree so that the reconciler will fail the task. */
  inconsistency?: string;
  /** What the task's tool keeps durably and its place in a tree of tasks (docs/durable-execution.md). */
  durable?: DurableView;
  /**
   * Each step and child call of the task by name, in the order they started: when, for how long, stored by which
   * attempt, how large (docs/durable-execution.md, "What operators see"). At most STEPS_SHOWN; absent when none.
   */
  steps?: StepView[];
  /** How many steps and child calls were left out of `steps` (beyond STEPS_SHOWN). */
  stepsLeftOut?: number;
  /** What it waits for while parked, its waits and the events kept for it (docs/durable-execution.md, "Waits"). */
  waits?: WaitsView;
  /** The task's webhook, its deliveries not made yet and its last attempts (docs/webhooks.md). */
  webhook?: WebhookInspection;
}

/** A task's webhook as operators see it: where it goes, which changes, and its deliveries. */
export interface WebhookInspection extends WebhookView {
  url: string;
  events: WebhookEvents;
}

/** One step or child call of a task as operators see it. */
export interface StepView {
  kind: 'step' | 'call';
  /** The step's name, or the child call's key. */
  name: string;
  /** When the step's function started, or the child task was created. */
  startedAt: string;
  /** How long the step's function ran, or the child task took to end (absent while it runs). */
  durationMs?: number;
  /** The attempt that stored it. */
  attempt: number;
  /** Bytes of the step's result (JSON), or of the child's stored outcome once it ended. */
  bytes?: number;
  /** A call: its tool, its child task and that task's status (`gone` once it expired). */
  tool?: string;
  taskId?: string;
  status?: TaskStatus | 'gone';
  /** The failed task that stored it, when this task resumed that one (`mcpt retry --resume`). */
  resumedFrom?: string;
}

/** The most steps and child calls an inspection lists (the dashboard's task page reads it every second). */
export const STEPS_SHOWN = 500;

/** A task's durable state as operators see it: its checkpoint, its stored steps, its parent and its children. */
export interface DurableView {
  /** When the last checkpoint was saved and its size (bytes of JSON). */
  checkpoint?: { at: string; bytes: number };
  /** Step results stored. */
  steps: number;
  /** The task that started this one (ctx.callTool). */
  parent?: string;
  /** The tasks this one started, with their tool and status (an expired one as `gone`). */
  children: { taskId: string; tool: string; status: TaskStatus | 'gone' }[];
  /** The failed task this one continues, and the task that continues this one (`mcpt retry --resume`). */
  resumedFrom?: string;
  resumedBy?: string;
}

/**
 * The jobs of the tool queues by what they wait for (docs/observability.md, "Queue depth"). BullMQ's own states do
 * not say it: our tool queues keep every job that waits for a worker in BullMQ's prioritized set (the fair order
 * between principals, docs/scheduling.md), so BullMQ's `waiting` count is always 0 for them.
 */
export interface QueueDepth {
  /** Ready to start when a worker slot frees: BullMQ's wait list and prioritized set. */
  waiting: number;
  /** Taken by a worker: running, or its tool waiting for the client's answer (a task in input_required). */
  active: number;
  /** Not before a time: a retry's backoff, a job held back by a per-principal cap, an external tool's next poll. */
  delayed: number;
  /**
   * Jobs held back by per-principal caps (MAX_RUNNING_PER_OWNER, maxRunningPerOwner): most of them are among
   * `delayed`, a few for a moment among `waiting` (started again, not admitted yet).
   */
  held: number;
}

export interface Overview {
  at: number;
  tasks: { total: number; byStatus: Record<TaskStatus, number>; byKind: Record<TaskKind, number> };
  /** The jobs of the tool queues by what they wait for. */
  jobs: QueueDepth;
  workers: { name: string; addr: string; age: number }[];
  oldestWaiting?: { taskId: string; tool: string; owner: string; waitingMs: number; createdAt: number };
  /** Per tool: running/limit, queued per principal, rate-limit wait, retries, timeouts (docs/scheduling.md). */
  tools?: ToolSchedulingView[];
  /** Jobs held back by per-principal caps, by principal. */
  heldByPrincipal?: Record<string, number>;
  /** Live catalog entries left out, with their reason and publisher (docs/catalog.md, "Bounds"). */
  refusedTools?: CatalogRefusal[];
  /** Each worker's upstream MCP servers (docs/gateway.md): state, reason, tools. */
  upstreams?: UpstreamStatus[];
  /** Working tasks per tool that no live worker serves (docs/catalog.md): they wait for one, up to their ttl. */
  unserved?: Record<string, number>;
  /** Parked tasks by what they wait for, and those due first (docs/durable-execution.md, "Waits"). */
  parked?: ParkedOverview;
}

/**
 * The upstream tools the gateway's workers left out at publish (docs/catalog.md, "Budgets"), as catalog refusals
 * published by '<worker>/<upstream>' as their catalog entries would have been: one per tool and reason, however many
 * workers front that upstream.
 */
function upstreamRefusals(upstreams: readonly UpstreamStatus[]): CatalogRefusal[] {
  const refusals = new Map<string, CatalogRefusal>();
  for (const { upstream, worker, refusedTools = [] } of upstreams) {
    for (const { tool, reason } of refusedTools) {
      const key = `${tool}\n${reason}`;
      if (!refusals.has(key)) refusals.set(key, { tool, reason, publisher: `${worker}/${upstream}` });
    }
  }
  return [...refusals.values()];
}

export interface PurgeResult {
  /** Terminal tasks that finished before the cutoff (deleted unless dryRun). */
  taskIds: string[];
  dryRun: boolean;
}

const SCAN_BATCH = 500;
/** Counting reads fewer fields per task, so it takes bigger batches. */
const COUNT_BATCH = 2000;

/** An operator's command that cannot be carried out; its message says why, for the terminal. */
export class AdminError extends LocalError {
  constructor(
    code: typeof LocalErrorCode.TaskNotFound | typeof LocalErrorCode.NotAllowed,
    message: string,
    context: Record<string, unknown> = {},
  ) {
    super(code, message, context);
  }
}

export class TaskAdmin {
  constructor(
    private readonly store: TaskStore,
    private readonly queue: Queue<ToolJobData>,
    /** Each tool's queue, and the catalog that names them (docs/catalog.md). */
    private readonly tools?: {
      queues: ExternalQueues;
      catalog: ToolCatalog;
      scheduling?: SchedulingView;
      gateway?: GatewayState;
    },
  ) {}

  /** Each tool's scheduling as operators see it (docs/scheduling.md), and the jobs held back per principal. */
  async scheduling(
    sample?: number,
    /** The live catalog entries when the caller has them cached (an api replica's CatalogView); default: read. */
    entries?: () => Iterable<CatalogEntry>,
  ): Promise<{ tools: ToolSchedulingView[]; heldByPrincipal: Record<string, number> }> {
    const view = this.tools?.scheduling;
    if (!this.tools || !view) return { tools: [], heldByPrincipal: {} };
    const [tools, heldByPrincipal] = await Promise.all([
      view.tools(entries ? entries() : (await this.tools.catalog.read()).values(), sample),
      view.parked(),
    ]);
    return { tools, heldByPrincipal };
  }

  /** The shared queue of before the catalog, and the queue of every tool in the catalog. */
  queues(): Promise<Queue<ToolJobData>[]> {
    return this.#allQueues();
  }

  async #allQueues(): Promise<Queue<ToolJobData>[]> {
    if (!this.tools) return [this.queue];
    const { queues, catalog } = this.tools;
    const names = new Set([...(await catalog.read()).values()].map((entry) => entry.queue));
    return [this.queue, ...[...names].map((name) => queues.get(name))];
  }

  /**
   * One page of tasks matching `filter`, newest first. Members are examined in batches; at most `scanLimit` per
   * call, so a filter that matches little answers a short page with a cursor rather than scanning everything.
   */
  async list(filter: TaskFilter, options: { cursor?: string; limit: number; scanLimit?: number }): Promise<AdminPage> {
    // Owner indexes hold tasks only, the global index plain calls too. A session owner's label names no index: the
    // global one is scanned and each task's owner labelled.
    const { owner } = filter;
    const index: TaskIndex =
      owner && filter.kind !== TaskKind.PlainToolCall && !isSessionOwnerLabel(owner) ? { owner } : 'all';
    const scanLimit = options.scanLimit ?? 10_000;
    let upper =
      options.cursor !== undefined
        ? `(${decodeCursor(options.cursor)}`
        : filter.createdBefore !== undefined
          ? `(${timeBound(filter.createdBefore + 1)}`
          : '+';
    const lower = filter.createdAfter !== undefined ? `[${timeBound(filter.createdAfter)}` : '-';
    const matches: string[] = [];
    let scanned = 0;
    let last: string | undefined;
    let exhausted = false;
    while (matches.length < options.limit && scanned < scanLimit) {
      const batch = Math.min(SCAN_BATCH, scanLimit - scanned);
      const members = await this.store.indexes.members(index, { from: upper, to: lower, count: batch, reverse: true });
      if (members.length < batch) exhausted = true;
      const summaries = await this.store.summaries(members.map(taskIdOf));
      for (let i = 0; i < members.length && matches.length < options.limit; i++) {
        const member = members[i] as string;
        scanned++;
        last = member;
        if (matchesFilter(summaries[i], filter)) matches.push(taskIdOf(member));
      }
      if (exhausted || last === undefined) break;
      upper = `(${last}`;
    }
    const records = await this.store.records(matches);
    const more =
      last !== undefined &&
      (await this.store.indexes.members(index, { from: `(${last}`, to: lower, count: 1, reverse: true })).length > 0;
    return more && last !== undefined ? { tasks: records, nextCursor: encodeCursor(last) } : { tasks: records };
  }

  /** Everything known about one task, or undefined when it does not exist (never did, expired, purged). */
  async inspect(taskId: string): Promise<TaskInspection | undefined> {
    const stored = await this.store.inspect(taskId);
    if (!stored) return undefined;
    const { record } = stored;
    const queue = this.tools?.queues.get(jobQueueOf(record)) ?? this.queue;
    // A job an api from before the catalog queued is in the shared queue.
    const job = (await queue.getJob(taskId)) ?? (await this.queue.getJob(taskId));
    let view: JobView | undefined;
    let state: ObservedJobState = 'unknown';
    if (job) {
      state = await job.getState();
      view = {
        state,
        phase: JOB_PHASE[state],
        attemptsStarted: job.attemptsStarted,
        attemptsMade: job.attemptsMade,
        maxAttempts: job.opts.attempts ?? 1,
        stalledCounter: job.stalledCounter,
        addedAt: job.timestamp,
        progress: job.progress,
        // The holder's instance (lost-jobs.ts), shown by its worker's name as "Running on <worker>." says it.
        ...(job.processedBy ? { processedBy: workerOf(job.processedBy) } : {}),
        ...(job.processedOn ? { processedOn: job.processedOn } : {}),
        ...(job.finishedOn ? { finishedOn: job.finishedOn } : {}),
        ...(job.failedReason ? { failedReason: job.failedReason } : {}),
      };
    }
    const verdict = reconcile(record, state, job?.failedReason);
    const [durable, steps, waits, webhookView] = await Promise.all([
      this.#durableView(record),
      this.#steps(record),
      waitsView(this.store, record),
      // Read only for a task that has a webhook.
      record.webhook ? this.store.webhooks.view(record.taskId) : undefined,
    ]);
    const webhook = record.webhook && webhookView ? { ...record.webhook, ...webhookView } : undefined;
    // A working task whose tool no live worker serves says so, as tasks/get does (unserved.ts). Only a working task
    // can: the catalog is not read for the others (the dashboard's task page asks every second).
    const live = this.tools && record.status === TaskStatus.Working ? await this.tools.catalog.read() : undefined;
    return {
      ...stored,
      ...(live ? { record: withServedStatus(record, (tool) => live.has(tool)) } : {}),
      ...(view ? { job: view } : {}),
      ...(verdict.action === 'fail' ? { inconsistency: verdict.statusMessage } : {}),
      ...(durable ? { durable } : {}),
      ...(steps && steps.shown.length > 0 ? { steps: steps.shown } : {}),
      ...(steps && steps.leftOut > 0 ? { stepsLeftOut: steps.leftOut } : {}),
      ...(webhook ? { webhook } : {}),
      ...(waits ? { waits } : {}),
    };
  }

  /** The task's steps and child calls, read (facts only) for a task whose record says it keeps durable state. */
  async #steps(record: TaskRecord): Promise<{ shown: StepView[]; leftOut: number } | undefined> {
    if (!record.durable) return undefined;
    const entries = await this.store.durable.entries(record.taskId);
    const shown = entries.slice(0, STEPS_SHOWN);
    const calls = shown.filter((entry) => entry.taskId !== undefined);
    const children = await this.store.endings(calls.map((entry) => entry.taskId as string));
    const ending = new Map(calls.map((entry, i) => [entry.taskId, children[i]]));
    return {
      leftOut: entries.length - shown.length,
      shown: shown.map((entry): StepView => {
        const view: StepView = {
          kind: entry.kind,
          name: entry.name,
          startedAt: new Date(entry.at).toISOString(),
          attempt: entry.attempt,
          ...(entry.ms !== undefined ? { durationMs: entry.ms } : {}),
          ...(entry.bytes !== undefined ? { bytes: entry.bytes } : {}),
          ...(entry.from !== undefined ? { resumedFrom: entry.from } : {}),
        };
        if (entry.kind !== 'call') return view;
        const child = ending.get(entry.taskId);
        return {
          ...view,
          ...(entry.tool !== undefined ? { tool: entry.tool } : {}),
          ...(entry.taskId !== undefined ? { taskId: entry.taskId } : {}),
          status: child?.status ?? 'gone',
          ...(child?.endedAt !== undefined ? { durationMs: Math.max(0, child.endedAt - entry.at) } : {}),
          ...(child?.bytes !== undefined ? { bytes: child.bytes } : {}),
        };
      }),
    };
  }

  /** Parked tasks by what they wait for, and those due first (mcpt overview, the dashboard). */
  parked(limit?: number): Promise<ParkedOverview> {
    return parkedOverview(this.store, limit);
  }

  /** How many tasks are parked on each kind of wait (a command per kind: what a metrics scrape reads). */
  parkedCounts(): ReturnType<TaskStore['waits']['counts']> {
    return this.store.waits.counts();
  }

  /** The durable part of an inspection, read only for a task whose record says it has one (or a parent). */
  async #durableView(record: TaskRecord): Promise<DurableView | undefined> {
    const { durable, parent, resumedFrom, resumedBy } = record;
    if (!durable && parent === undefined && resumedBy === undefined) return undefined;
    const counts = durable ? await this.store.durable.counts(record.taskId) : { steps: 0, children: [] };
    const children = await this.store.summaries(counts.children, ['tool']);
    return {
      ...(durable?.checkpoint
        ? { checkpoint: { at: new Date(durable.checkpoint.at).toISOString(), bytes: durable.checkpoint.bytes } }
        : {}),
      steps: counts.steps,
      ...(parent !== undefined ? { parent } : {}),
      ...(resumedFrom !== undefined ? { resumedFrom } : {}),
      ...(resumedBy !== undefined ? { resumedBy } : {}),
      // In the order they were started (a set has none); the expired ones last.
      children: counts.children
        .map((taskId, i) => ({ taskId, summary: children[i] }))
        .sort((a, b) => (a.summary?.createdAt ?? Infinity) - (b.summary?.createdAt ?? Infinity))
        .map(({ taskId, summary }) => ({ taskId, tool: summary?.tool ?? '', status: summary?.status ?? 'gone' })),
    };
  }

  /**
   * The queue depth over the tool queues: what a metrics scrape and the dashboard's chart need, without the worker
   * list or a job read. `heldByPrincipal`: the held jobs when the caller has read them already.
   */
  async queueJobs(heldByPrincipal?: Record<string, number>): Promise<QueueDepth> {
    const queues = await this.#allQueues();
    const [perQueue, held] = await Promise.all([
      Promise.all(queues.map((queue) => queue.getJobCounts(...DEPTH_COUNTS))),
      heldByPrincipal ? Promise.resolve(heldByPrincipal) : this.#held(),
    ]);
    return depthOf(perQueue, held);
  }

  /** Jobs held back by per-principal caps, by principal (none without the scheduling view). */
  #held(): Promise<Record<string, number>> {
    return this.tools?.scheduling?.parked() ?? Promise.resolve({});
  }

  /**
   * The webhook deliveries across workers (docs/webhooks.md): attempts by outcome since the prefix began (counted in
   * Redis by the settling script), and how many tasks have deliveries not made yet. Two commands.
   */
  async webhookDeliveries(): Promise<{ outcomes: Record<WebhookOutcome, number>; pendingTasks: number }> {
    const [outcomes, pendingTasks] = await Promise.all([
      this.store.webhooks.outcomes(),
      this.store.webhooks.pendingTasks(),
    ]);
    return { outcomes, pendingTasks };
  }

  /** How many worker processes are connected to the tool queues (one per worker name). */
  async workerCount(): Promise<number> {
    const perQueue = await Promise.all((await this.#allQueues()).map((queue) => queue.getWorkers()));
    return new Set(perQueue.flat().map((client) => workerName(client['rawname'] ?? ''))).size;
  }

  /**
   * The BullMQ side across the tool queues (and the shared queue of earlier versions): the queue depth, the worker
   * processes connected (one per worker name, however many tool queues and connections each has), the oldest
   * waiting job.
   */
  async queueState(heldByPrincipal?: Record<string, number>): Promise<{
    jobs: QueueDepth;
    workers: { name: string; addr: string; age: number }[];
    oldest: Job<ToolJobData> | undefined;
  }> {
    const queues = await this.#allQueues();
    const [perQueue, held] = await Promise.all([
      Promise.all(
        queues.map((queue) =>
          // Our tool queues hold their waiting jobs as prioritized (fair order between principals).
          Promise.all([
            queue.getJobCounts(...DEPTH_COUNTS),
            queue.getWorkers(),
            queue.getJobs(['waiting', 'prioritized'], 0, 0, true),
          ]),
        ),
      ),
      heldByPrincipal ? Promise.resolve(heldByPrincipal) : this.#held(),
    ]);
    const workers = new Map<string, { name: string; addr: string; age: number }>();
    let oldest: Job<ToolJobData> | undefined;
    for (const [, clients, waiting] of perQueue) {
      for (const client of clients) {
        // BullMQ names a worker's connection "<prefix>:<queue, base64>:w:<worker name>".
        const name = workerName(client['rawname'] ?? '');
        const addr = client['addr'] ?? '';
        if (!workers.has(name)) workers.set(name, { name, addr, age: Number(client['age'] ?? 0) });
      }
      for (const first of waiting) if (!oldest || first.timestamp < oldest.timestamp) oldest = first;
    }
    const jobs = depthOf(
      perQueue.map(([counts]) => counts),
      held,
    );
    return { jobs, workers: [...workers.values()], oldest };
  }

  /** Counts by status and kind (reads every record's status: O(tasks), batched), queue state, workers. */
  async overview(now = Date.now()): Promise<Overview> {
    const byStatus = Object.fromEntries(TASK_STATUSES.map((status) => [status, 0])) as Record<TaskStatus, number>;
    const byKind: Record<TaskKind, number> = { task: 0, call: 0 };
    let total = 0;
    const workingPerTool = new Map<string, number>();
    let upper = '+';
    for (;;) {
      const members = await this.store.indexes.members('all', {
        from: upper,
        to: '-',
        count: COUNT_BATCH,
        reverse: true,
      });
      for (const summary of await this.store.summaries(members.map(taskIdOf), ['tool'])) {
        if (!summary || isExpired(summary, now)) continue;
        total++;
        byStatus[summary.status]++;
        byKind[summary.kind]++;
        if (summary.status === TaskStatus.Working && summary.tool !== undefined) {
          workingPerTool.set(summary.tool, (workingPerTool.get(summary.tool) ?? 0) + 1);
        }
      }
      const last = members[members.length - 1];
      if (members.length < COUNT_BATCH || last === undefined) break;
      upper = `(${last}`;
    }
    const catalog = await this.tools?.catalog.readAll();
    const { tools, heldByPrincipal } = await this.scheduling(undefined, catalog && (() => catalog.entries.values()));
    const { jobs, workers, oldest } = await this.queueState(heldByPrincipal);
    const overview: Overview = { at: now, tasks: { total, byStatus, byKind }, jobs, workers, tools, heldByPrincipal };
    if (catalog) {
      overview.refusedTools = catalog.refused;
      const unserved = [...workingPerTool].filter(([tool]) => !catalog.entries.has(tool));
      if (unserved.length > 0) overview.unserved = Object.fromEntries(unserved.sort(([a], [b]) => a.localeCompare(b)));
    }
    const parked = await this.parked();
    if (parked.soonest.length > 0 || Object.values(parked.byKind).some((count) => count > 0)) overview.parked = parked;
    const upstreams = await this.tools?.gateway?.upstreams(now);
    if (upstreams && upstreams.length > 0) {
      overview.upstreams = upstreams;
      const leftOut = upstreamRefusals(upstreams);
      if (leftOut.length > 0) overview.refusedTools = [...(overview.refusedTools ?? []), ...leftOut];
    }
    const job = oldest;
    if (job?.id) {
      const record = await this.store.get(job.id);
      const createdAt = record?.createdAt ?? job.timestamp;
      overview.oldestWaiting = {
        taskId: job.id,
        tool: record?.tool ?? job.data.tool,
        owner: ownerLabel(record?.owner ?? ''),
        createdAt,
        waitingMs: Math.max(0, now - createdAt),
      };
    }
    return overview;
  }

  /**
   * How many live (non-terminal) tasks are in each status, from the `live` set; at most `limit` are read, so the
   * cost per call stays bounded whatever the backlog (the answer says whether it is complete).
   */
  async liveCounts(limit = 10_000): Promise<{ counts: Record<TaskStatus, number>; total: number; complete: boolean }> {
    const counts = Object.fromEntries(TASK_STATUSES.map((status) => [status, 0])) as Record<TaskStatus, number>;
    const [total, ids] = await Promise.all([this.store.indexes.liveCount(), this.store.indexes.live(limit)]);
    for (let i = 0; i < ids.length; i += SCAN_BATCH) {
      const statuses = await this.store.statuses(ids.slice(i, i + SCAN_BATCH));
      for (const status of statuses) if (status && !isTerminal(status)) counts[status]++;
    }
    return { counts, total, complete: ids.length >= total };
  }

  /** Cancels a task on behalf of an operator, with the same transition and work stop as tasks/cancel. */
  async cancel(service: TaskService, taskId: string, statusMessage = 'The task was cancelled by an operator.') {
    const record = await this.store.get(taskId);
    if (!record)
      throw new AdminError(
        LocalErrorCode.TaskNotFound,
        `Task ${taskId} not found (it never existed, expired or was purged)`,
      );
    if (isTerminal(record.status)) {
      throw new AdminError(
        LocalErrorCode.NotAllowed,
        `Task ${taskId} is already ${record.status}; only working or input_required tasks can be cancelled`,
      );
    }
    return service.cancel(record, statusMessage);
  }

  /**
   * Runs a failed task again as a new task: same tool, arguments, owner and session, the same ttl; the old task
   * stays as it is. `service` gives the TaskService that creates it (its timing decides the new task's ttl bounds
   * and pollInterval), `tool` the tool's catalog entry: whether it may run again after a worker crash, and the
   * scheduling its calls get (attempts and backoff), as for the api's own calls. With `resume`, the new task
   * continues the failed one (docs/durable-execution.md, "Resuming a failed task"): it begins with its checkpoint,
   * its steps and its child calls that ended with a result, and the two tasks name each other (`resumedFrom`,
   * `resumedBy`); a failed task is resumed once. Without, it starts over: its completed steps run again.
   */
  async retry(
    taskId: string,
    options: {
      service: (original: TaskRecord) => TaskService;
      tool: (name: string) => Pick<CatalogEntry, 'retrySafe' | 'scheduling'>;
      resume?: boolean;
    },
  ): Promise<TaskRecord> {
    const record = await this.store.get(taskId);
    if (!record)
      throw new AdminError(
        LocalErrorCode.TaskNotFound,
        `Task ${taskId} not found (it never existed, expired or was purged)`,
      );
    if (record.status !== TaskStatus.Failed || record.kind !== TaskKind.Task) {
      throw new AdminError(
        LocalErrorCode.NotAllowed,
        `Task ${taskId} is ${record.kind === TaskKind.Task ? record.status : 'a plain call'}; only failed tasks can be retried`,
      );
    }
    const details = await this.store.details(taskId);
    const tool = options.tool(record.tool);
    const resume = options.resume === true ? await this.#resumeFrom(record) : undefined;
    const create = options.service(record).create({
      kind: TaskKind.Task,
      owner: record.owner,
      sessionId: record.sessionId,
      tool: record.tool,
      arguments: details?.arguments ?? {},
      retrySafe: tool.retrySafe,
      ...(tool.scheduling !== undefined ? { scheduling: tool.scheduling } : {}),
      ...(record.external?.mode === 'queue' && record.external.queue !== undefined
        ? { queue: record.external.queue }
        : {}),
      requestedTtl: record.ttl,
      statusMessage: resume
        ? `Resumes task ${taskId} from its completed steps, queued for a worker.`
        : `Retry of task ${taskId}, queued for a worker.`,
      ...(resume ? { resume } : {}),
      // The system the original told of its failure is told of the retry's end too (docs/webhooks.md).
      ...(record.webhook ? { webhook: record.webhook } : {}),
    });
    // The create script's refusal to resume (resumed already, gone meanwhile), in an operator's terms.
    return create.catch((error: unknown) => {
      const { NotAllowed, TaskNotFound } = LocalErrorCode;
      if (resume && error instanceof LocalError && (error.code === NotAllowed || error.code === TaskNotFound)) {
        throw new AdminError(error.code, error.message, error.context);
      }
      throw error;
    });
  }

  /**
   * What a task resuming `record` carries over: its durable state less the child calls whose child did not end with
   * a result (failed with an error, cancelled, gone): those run again. The create script copies the rest in its step.
   */
  async #resumeFrom(record: TaskRecord): Promise<NonNullable<CreateTaskInput['resume']>> {
    const children = record.durable ? await this.store.durable.children(record.taskId) : [];
    const records = await this.store.records(children);
    const finished = new Set(
      records.filter((child) => child.outcome !== undefined && 'result' in child.outcome).map((child) => child.taskId),
    );
    return {
      taskId: record.taskId,
      drop: children.filter((id) => !finished.has(id)),
      // The new record says it keeps durable state (its first attempt reads it), with the checkpoint's facts.
      ...(record.durable
        ? { durable: { children: 0, ...(record.durable.checkpoint ? { checkpoint: record.durable.checkpoint } : {}) } }
        : {}),
    };
  }

  /** Deletes terminal tasks whose last change is older than `finishedBefore` (epoch ms), oldest first. */
  async purge(finishedBefore: number, options: { dryRun?: boolean } = {}): Promise<PurgeResult> {
    const taskIds: string[] = [];
    // lastUpdatedAt >= createdAt, so only members created before the cutoff can qualify.
    let lower = '-';
    const upper = `(${timeBound(finishedBefore)}`;
    for (;;) {
      const members = await this.store.indexes.members('all', {
        from: lower,
        to: upper,
        count: SCAN_BATCH,
        reverse: false,
      });
      const summaries = await this.store.summaries(members.map(taskIdOf));
      for (let i = 0; i < members.length; i++) {
        const summary = summaries[i];
        const member = members[i] as string;
        if (!summary || !isTerminal(summary.status)) continue;
        if (Number(summary.lastUpdatedAt) >= finishedBefore) continue;
        const taskId = taskIdOf(member);
        taskIds.push(taskId);
        if (options.dryRun) continue;
        await this.store.delete({
          taskId,
          owner: summary.owner ?? '',
          createdAt: summary.createdAt,
          kind: summary.kind,
        });
        // A finished job is normally gone already; remove any leftover so nothing refers to the task.
        await this.queue.remove(taskId).catch(() => 0);
      }
      const last = members[members.length - 1];
      if (members.length < SCAN_BATCH || last === undefined) break;
      lower = `(${last}`;
    }
    return { taskIds, dryRun: options.dryRun === true };
  }
}

/** The BullMQ counts the queue depth is made of. */
const DEPTH_COUNTS = ['wait', 'prioritized', 'active', 'delayed'] as const;

function depthOf(perQueue: readonly Record<string, number>[], heldByPrincipal: Record<string, number>): QueueDepth {
  const depth: QueueDepth = { waiting: 0, active: 0, delayed: 0, held: 0 };
  for (const counts of perQueue) {
    depth.waiting += (counts['wait'] ?? 0) + (counts['prioritized'] ?? 0);
    depth.active += counts['active'] ?? 0;
    depth.delayed += counts['delayed'] ?? 0;
  }
  for (const count of Object.values(heldByPrincipal)) depth.held += count;
  return depth;
}

/** Index members start with the zero-padded creation time: a bound on it is a lexical bound. */
function timeBound(epochMs: number): string {
  return String(Math.max(0, epochMs)).padStart(13, '0');
}

function workerName(clientName: string): string {
  const marker = clientName.indexOf(':w:');
  return workerOf(marker === -1 ? clientName : clientName.slice(marker + 3));
}

/** Whether a task of `owner` matches the filter's owner: the owner itself, or its label. */
function ownedBy(owner: string, wanted: string): boolean {
  return owner === wanted || (isSessionOwnerLabel(wanted) && ownerLabel(owner) === wanted);
}

function matchesFilter(summary: TaskSummary | undefined, filter: TaskFilter): boolean {
  if (!summary || isExpired(summary, Date.now())) return false;
  if (filter.statuses && filter.statuses.length > 0 && !filter.statuses.includes(summary.status)) return false;
  if (filter.tool !== undefined && summary.tool !== filter.tool) return false;
  if (filter.owner !== undefined && !ownedBy(summary.owner ?? '', filter.owner)) return false;
  if (filter.kind !== undefined && summary.kind !== filter.kind) return false;
  return true;
}
