// Periodic chores every worker runs: delete what expired (index entries, queued jobs) and settle tasks whose job
// can no longer settle them (crash between record and job, BullMQ giving up on a stalled job). Every step is
// idempotent or claimed atomically, so several workers can run it at once.
import { stopTaskWork } from './control.ts';
import {
  lostSettlement,
  reconcile,
  settleWithJobFailure,
  settleWithJobReturn,
  type ObservedJobState,
  type Settlement,
} from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { SessionEvents } from './events.ts';
import type { ExternalQueues } from './external-queues.ts';
import type { Logger } from './logger.ts';
import type { ToolJobData } from './queue.ts';
import type { RedisClient } from './redis.ts';
import type { TaskStore } from './records/store.ts';

export interface MaintenanceOptions {
  intervalMs: number;
  /** A live task untouched this long is checked against its BullMQ job. */
  reconcileAfterMs: number;
  batchSize: number;
  /** Queues of tools served by external consumers: their tasks are checked against the job in that queue. */
  externalQueues?: ExternalQueues;
}

export class Maintenance {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
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
    const tick = () => {
      this.#running = this.runOnce()
        .then(() => undefined)
        .catch((error: unknown) => {
          this.log.warn('maintenance pass failed', { error: String(error) });
        })
        .finally(() => {
          this.#running = undefined;
          if (this.#timer) this.#timer = setTimeout(tick, this.options.intervalMs);
        });
    };
    this.#timer = setTimeout(tick, this.options.intervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  async runOnce(now = Date.now()): Promise<{ expired: number; reconciled: number }> {
    const expired = await this.sweepExpired(now);
    const reconciled = await this.reconcileStale(now);
    return { expired, reconciled };
  }

  /** Removes what belongs to expired tasks; each entry is claimed by the one process whose ZREM removed it. */
  async sweepExpired(now: number): Promise<number> {
    const { indexes } = this.store;
    let swept = 0;
    const eventsOf = new Map<string, Set<string>>();
    for await (const entry of indexes.claimExpired(now, this.options.batchSize)) {
      const { taskId, sessionId } = entry;
      if (sessionId) eventsOf.set(sessionId, (eventsOf.get(sessionId) ?? new Set()).add(taskId));
      await indexes.deleteTask(entry);
      await stopTaskWork(this.queue, this.redis, this.store.keys, taskId);
      swept++;
    }
    // The events expire with the task (DESIGN invariant 4) rather than with the session.
    for (const [sessionId, taskIds] of eventsOf) await this.#events.dropTaskEvents(sessionId, taskIds);
    if (swept > 0) this.log.info('expired tasks swept', { count: swept });
    return swept;
  }

  /** Settles live tasks whose BullMQ job says they can no longer finish (DESIGN invariant 6). */
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
      const external = record.external;
      const queue =
        external?.mode === 'queue' && external.queue !== undefined && this.options.externalQueues
          ? this.options.externalQueues.get(external.queue)
          : this.queue;
      const job = await queue.getJob(taskId);
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
}
