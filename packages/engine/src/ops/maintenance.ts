// Periodic chores every worker runs: delete what expired (index entries, queued jobs) and settle tasks whose job
// can no longer settle them (crash between record and job, BullMQ giving up on a stalled job). Every step is
// idempotent or claimed atomically, so several workers can run it at once.
import { stopTaskWork } from '../tasks/stop-task-work.ts';
import {
  lostSettlement,
  reconcile,
  settleWithJobFailure,
  settleWithJobReturn,
  type ObservedJobState,
  type Settlement,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { SessionEvents } from '../sessions/session-events.ts';
import type { ExternalQueues } from '../external-queues.ts';
import type { Logger } from '@mcp-tasks/runtime';
import { jobQueueOf, type ToolJobData } from '../queue.ts';
import type { RedisClient } from '../redis.ts';
import type { ClaimedExpiry } from '../records/indexes.ts';
import type { TaskStore } from '../records/store.ts';
import { traceLostAttempts } from '../tasks/lost-attempts.ts';
import { contextOf, tracer } from '@mcp-tasks/runtime';

export interface MaintenanceOptions {
  intervalMs: number;
  /** A live task untouched this long is checked against its BullMQ job. */
  reconcileAfterMs: number;
  batchSize: number;
  /**
   * Expired tasks claimed and deleted together (default 5000): a few commands per thousand tasks, and one read of
   * each session's event stream per batch.
   */
  sweepBatchSize?: number;
  /**
   * A pass sweeps for at most this long (default 1000 ms), so that it cannot starve the reconciler; a pass that
   * stopped with expired tasks left is followed by the next one at once rather than after `intervalMs`.
   */
  sweepBudgetMs?: number;
  /** How long a sweeper holds the expired tasks it claimed before another may claim them (default 30 s). */
  claimLeaseMs?: number;
  /** Queues of tools served by external consumers: their tasks are checked against the job in that queue. */
  externalQueues?: ExternalQueues;
}

const SWEEP_DEFAULTS = { sweepBatchSize: 5000, sweepBudgetMs: 1000, claimLeaseMs: 30_000 } as const;

/** What one sweep did: the tasks it deleted, and whether it stopped with expired tasks left (its time budget). */
export interface SweepResult {
  swept: number;
  more: boolean;
}

export class Maintenance {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopping = false;
  readonly #events: SessionEvents;

  constructor(
    private readonly redis: RedisClient,
    private readonly store: TaskStore,
    private readonly queue: Queue<ToolJobData>,
    private readonly log: Logger,
    private readonly options: MaintenanceOptions,
  ) {
    this.#events = new SessionEvents(redis, store.keys, store.streams);
  }

  start(): void {
    this.#stopping = false;
    const tick = () => {
      let behind = false;
      this.#running = this.runOnce()
        .then((pass) => void (behind = pass.behind))
        .catch((error: unknown) => {
          this.log.warn('maintenance pass failed', { error: String(error) });
        })
        .finally(() => {
          this.#running = undefined;
          if (this.#timer) this.#timer = setTimeout(tick, behind ? 0 : this.options.intervalMs);
        });
    };
    this.#timer = setTimeout(tick, this.options.intervalMs);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One pass; `behind` when expired tasks were left for the next pass. */
  async runOnce(now = Date.now()): Promise<{ expired: number; reconciled: number; behind: boolean }> {
    const { swept, more } = await this.sweepExpired(now);
    const reconciled = await this.reconcileStale(now);
    return { expired: swept, reconciled, behind: more };
  }

  /**
   * Deletes what belongs to tasks expired at `now`, batch after batch until none is left or the time budget is
   * spent. Each batch is claimed atomically, so several workers share the work without doing it twice; its deletes
   * are idempotent and the claim is released only by the last of them, so a worker that dies half way leaves the
   * batch to be claimed again when its lease ends.
   */
  async sweepExpired(now: number): Promise<SweepResult> {
    const { sweepBatchSize, sweepBudgetMs, claimLeaseMs } = { ...SWEEP_DEFAULTS, ...this.options };
    const stopAt = performance.now() + sweepBudgetMs;
    let swept = 0;
    let more = true;
    while (more && !this.#stopping && performance.now() < stopAt) {
      const claimed = await this.store.indexes.claimExpired(now, sweepBatchSize, now + claimLeaseMs);
      await this.#deleteExpired(claimed);
      swept += claimed.length;
      more = claimed.length === sweepBatchSize;
    }
    if (swept > 0) this.log.info('expired tasks swept', { count: swept, ...(more ? { more } : {}) });
    return { swept, more };
  }

  async #deleteExpired(claimed: readonly ClaimedExpiry[]): Promise<void> {
    if (claimed.length === 0) return;
    const { indexes } = this.store;
    const live = await indexes.areLive(claimed.map((task) => task.taskId));
    // A task that ended has no job left to remove nor work to stop: only an expired live task costs BullMQ calls.
    // Its job is in its tool's queue (the entry names it), or, queued by an api from before the catalog, in the
    // shared one (docs/catalog.md, "Queues").
    const queuesOf = (task: ClaimedExpiry) =>
      task.queue !== undefined && this.options.externalQueues
        ? [this.options.externalQueues.get(task.queue), this.queue]
        : [this.queue];
    await Promise.all(
      claimed.flatMap((task, i) =>
        live[i] ? [stopTaskWork(queuesOf(task), this.redis, this.store.keys, task.taskId)] : [],
      ),
    );
    // The events expire with the task (invariant 4, docs/architecture.md) rather than with the session.
    const eventsOf = new Map<string, Set<string>>();
    for (const { sessionId, taskId } of claimed) {
      if (sessionId) eventsOf.set(sessionId, (eventsOf.get(sessionId) ?? new Set()).add(taskId));
    }
    await this.#events.dropTaskEvents(eventsOf);
    // Last, as it releases the claims: whatever failed before is redone by whoever claims them next.
    await indexes.deleteClaimed(claimed);
  }

  /** Settles live tasks whose BullMQ job says they can no longer finish (invariant 6, docs/architecture.md). */
  async reconcileStale(now: number): Promise<number> {
    const { indexes } = this.store;
    const ids = await indexes.liveSince(now - this.options.reconcileAfterMs, this.options.batchSize);
    let settled = 0;
    for (const taskId of ids) {
      const record = await this.store.get(taskId);
      if (!record) {
        await indexes.leaveLive(taskId);
        continue;
      }
      const queue = this.options.externalQueues?.get(jobQueueOf(record)) ?? this.queue;
      // A job an api from before the catalog queued is in the shared queue (docs/catalog.md, "Queues").
      const job = (await queue.getJob(taskId)) ?? (await this.queue.getJob(taskId));
      const state: ObservedJobState = job ? await job.getState() : 'unknown';
      const verdict = reconcile(record, state, job?.failedReason);
      if (verdict.action !== 'none') {
        const outcome: Settlement =
          verdict.action === 'fail'
            ? lostSettlement(verdict.statusMessage)
            : state === 'completed'
              ? settleWithJobReturn(record.tool, job?.returnvalue)
              : settleWithJobFailure(record.tool, job?.failedReason);
        // Compare-and-set: the job state was read after the record, and the record may have moved meanwhile (a
        // callback task marked and its job finished on purpose); then the verdict is void and the next pass decides.
        const moved = await this.store.settle(record, outcome, { unchangedSince: record });
        if (!moved.ok && moved.reason === 'changed') {
          this.log.info('reconciliation skipped: the task changed while it was checked', { taskId, jobState: state });
        }
        if (moved.ok) {
          settled++;
          await this.#traceLostAttempts(record);
          this.log.warn('task settled by reconciliation', {
            taskId,
            tool: record.tool,
            owner: record.owner,
            jobState: state,
            ...(verdict.action === 'fail' ? { reason: verdict.statusMessage } : { from: 'the finished job' }),
          });
        }
      } else {
        // Consistent: look again only after another reconcileAfterMs.
        await indexes.checked(taskId, now);
      }
    }
    return settled;
  }

  /** An attempt whose worker died mid-run is put in the task's trace: no attempt comes after it (lost-attempts.ts). */
  async #traceLostAttempts(record: TaskRecord): Promise<void> {
    if (!tracer()) return;
    const lost = await this.store.takeUnendedAttempts(record.taskId).catch(() => []);
    traceLostAttempts(contextOf(record.trace), record, lost, 'reconciler');
  }
}
