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
import type { ExternalQueues } from './external-queues.ts';
import type { Logger } from './logger.ts';
import type { ToolJobData } from './queue.ts';
import type { RedisClient } from './redis.ts';
import { parseExpiryEntry, type TaskStore } from './task-store.ts';

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

  constructor(
    private readonly redis: RedisClient,
    private readonly store: TaskStore,
    private readonly queue: Queue<ToolJobData>,
    private readonly log: Logger,
    private readonly options: MaintenanceOptions,
  ) {}

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
    const keys = this.store.keys;
    const entries = await this.redis.zrangebyscore(keys.expiries(), '-inf', now, 'LIMIT', 0, this.options.batchSize);
    let swept = 0;
    const eventsOf = new Map<string, Set<string>>();
    for (const entry of entries) {
      if ((await this.redis.zrem(keys.expiries(), entry)) !== 1) continue;
      const { taskId, owner, member, sessionId } = parseExpiryEntry(entry);
      if (sessionId) eventsOf.set(sessionId, (eventsOf.get(sessionId) ?? new Set()).add(taskId));
      await this.redis
        .multi()
        .zrem(keys.ownerIndex(owner), member)
        .zrem(keys.allTasks(), member)
        .zrem(keys.live(), taskId)
        .del(keys.task(taskId))
        .exec();
      await stopTaskWork(this.queue, this.redis, keys, taskId);
      swept++;
    }
    for (const [sessionId, taskIds] of eventsOf) await this.dropEvents(sessionId, taskIds);
    if (swept > 0) this.log.info('expired tasks swept', { count: swept });
    return swept;
  }

  /**
   * Deletes the expired tasks' entries (status, progress, input requests) from their session's event stream, so
   * the events expire with the task (DESIGN invariant 4) rather than with the session. The stream is capped
   * (about 1000 entries), so one read per session and sweep is bounded.
   */
  private async dropEvents(sessionId: string, taskIds: ReadonlySet<string>): Promise<void> {
    const key = this.store.keys.sessionEvents(sessionId);
    const entries = await this.redis.xrange(key, '-', '+');
    const ids = entries.flatMap(([id, fields]) => {
      const at = fields.indexOf('taskId');
      return at % 2 === 0 && taskIds.has(fields[at + 1] ?? '') ? [id] : [];
    });
    for (let i = 0; i < ids.length; i += 500) await this.redis.xdel(key, ...ids.slice(i, i + 500));
  }

  /** Settles live tasks whose BullMQ job says they can no longer finish (DESIGN invariant 6). */
  async reconcileStale(now: number): Promise<number> {
    const keys = this.store.keys;
    const ids = await this.redis.zrangebyscore(
      keys.live(),
      '-inf',
      now - this.options.reconcileAfterMs,
      'LIMIT',
      0,
      this.options.batchSize,
    );
    let settled = 0;
    for (const taskId of ids) {
      const record = await this.store.get(taskId);
      if (!record) {
        await this.redis.zrem(keys.live(), taskId);
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
        const moved = await this.store.settle(record, outcome);
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
        await this.redis.zadd(keys.live(), 'XX', now, taskId);
      }
    }
    return settled;
  }
}
