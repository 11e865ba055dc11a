// The Redis side of tasks' webhook deliveries (docs/webhooks.md). transition-8.lua queues a delivery in the task's
// outbox in the step of the change that causes it; the workers' delivery loops claim the tasks with deliveries due
// (claim-due-1.lua, under a lease), read the head of each one's outbox with its record, and settle each attempt
// (settle-webhook-4.lua, fenced by the claim). The outbox and the attempt log expire with the task.
import { isTaskStatus, type TaskRecord, type TaskStatus } from '@mcp-tasks/protocol';
import type { RedisClient } from '../redis.ts';
import { RedisScripts, type SettleWebhookCall } from '../scripts.ts';
import { decodeRecord } from './codec.ts';
import type { TaskKeys } from './keys.ts';

/** A delivery waiting in a task's outbox: the facts of the change it carries, and its attempts so far. */
export interface QueuedDelivery {
  /** The entry as stored: a settle names it, so that it moves only the delivery it attempted. */
  raw: string;
  /** `webhook-id`: the same for every attempt of this delivery (receivers dedupe by it). */
  id: string;
  status: TaskStatus;
  /** The change's lastUpdatedAt, epoch ms. */
  at: number;
  statusMessage?: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the first attempt was made, epoch ms (the retries' time budget counts from it). */
  firstAttemptAt?: number;
}

/** One attempt as operators see it (mcpt inspect, the dashboard). */
export interface DeliveryAttempt {
  id: string;
  /** The task status the delivery carries. */
  status: TaskStatus;
  /** 1 for the first attempt of the delivery. */
  attempt: number;
  /** When it started, epoch ms. */
  at: number;
  outcome: 'delivered' | 'failed' | 'abandoned';
  /** The receiver's HTTP status, when it answered. */
  code?: number;
  /** What went wrong (a network error, a refused target, a timeout, the answer's status). */
  error?: string;
  /** How long it took, ms. */
  ms: number;
  /** The worker that made it. */
  worker: string;
  /** A failed attempt's retry, epoch ms. */
  nextAt?: number;
}

/** A task's webhook deliveries as operators see them. */
export interface WebhookView {
  /** Deliveries not made yet, oldest (the one being attempted) first. */
  pending: { id: string; status: TaskStatus; attempts: number }[];
  /** When the next attempt may start (epoch ms): now for a due one, a retry's backoff, or a worker's lease end. */
  nextAt?: number;
  /** The last attempts, oldest first (at most WEBHOOK_LOG_MAX). */
  attempts: DeliveryAttempt[];
  /** Changes of status not delivered because the outbox was full (WEBHOOK_MAX_PENDING). */
  dropped: number;
}

/** What a settle of an attempt says (settle-webhook-4.lua's outcomes, without the keys and the fence). */
export type DeliverySettlement =
  | { outcome: 'delivered' | 'abandoned'; attempt: DeliveryAttempt }
  | { outcome: 'retry'; attempt: DeliveryAttempt; nextAt: number }
  | { outcome: 'empty' | 'expired' };

/** The counters of attempts by outcome, across workers. */
export const WEBHOOK_OUTCOMES = ['delivered', 'failed', 'abandoned', 'expired'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** The `webhook-id` of a task's delivery of the change at `at` (lastUpdatedAt moves at every change of a task). */
export function deliveryId(taskId: string, at: number): string {
  return `${taskId}_${at}`;
}

export class WebhookOutbox {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: TaskKeys,
    /** The counters' hash (KeySpace.webhookCounters). */
    private readonly counters: string,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /** Up to `limit` tasks with a delivery due at `now`, each held by the caller until `leaseEnd` (its fence). */
  claim(now: number, limit: number, leaseEnd: number): Promise<string[]> {
    return this.#scripts.claimDue({ keys: { set: this.keys.webhooksDue() }, now, limit, leaseEnd });
  }

  /**
   * The head of the task's outbox (`raw` as stored; `head` decoded, undefined for an unreadable one) and its record
   * (undefined once expired), in one round trip.
   */
  async head(taskId: string): Promise<{ raw?: string; head?: QueuedDelivery; record?: TaskRecord }> {
    const [[, raw], [, hash]] = (await this.redis
      .pipeline()
      .lindex(this.keys.webhookOutbox(taskId), 0)
      .hgetall(this.keys.record(taskId))
      .exec()) as [[unknown, string | null], [unknown, Record<string, string>]];
    const record = decodeRecord(hash);
    if (typeof raw !== 'string') return record ? { record } : {};
    const head = decodeDelivery(taskId, raw);
    return { raw, ...(head ? { head } : {}), ...(record ? { record } : {}) };
  }

  /**
   * Settles an attempt of `head` (or an outbox found `empty`, a task `expired`) while the claim that ends at
   * `leaseEnd` holds: false when it no longer does (another worker claimed the task since), and nothing changed.
   */
  async settle(
    task: Pick<TaskRecord, 'taskId' | 'createdAt' | 'ttl'>,
    leaseEnd: number,
    head: QueuedDelivery | undefined,
    settlement: DeliverySettlement,
    logMax: number,
  ): Promise<boolean> {
    const { taskId } = task;
    const call: SettleWebhookCall = {
      keys: {
        due: this.keys.webhooksDue(),
        outbox: this.keys.webhookOutbox(taskId),
        log: this.keys.webhookLog(taskId),
        counters: this.counters,
      },
      taskId,
      leaseEnd,
      outcome: settlement.outcome,
      now: Date.now(),
      logMax,
      expiresAt: task.createdAt + task.ttl,
    };
    if ('attempt' in settlement) {
      if (!head) throw new Error('settle: an attempt settles the head it attempted');
      call.head = head.raw;
      call.attempt = JSON.stringify(settlement.attempt);
      if (settlement.outcome === 'retry') {
        call.nextAt = settlement.nextAt;
        call.next = encodeDelivery({
          ...head,
          attempts: head.attempts + 1,
          firstAttemptAt: head.firstAttemptAt ?? settlement.attempt.at,
        });
      }
    }
    return (await this.#scripts.settleWebhook(call)) === 'ok';
  }

  /** What operators see of a task's deliveries (read only for a task whose record has a webhook). */
  async view(taskId: string): Promise<WebhookView> {
    const replies = (await this.redis
      .pipeline()
      .lrange(this.keys.webhookOutbox(taskId), 0, -1)
      .lrange(this.keys.webhookLog(taskId), 0, -1)
      .zscore(this.keys.webhooksDue(), taskId)
      .hget(this.keys.record(taskId), 'webhookDropped')
      .exec()) as [[unknown, string[]], [unknown, string[]], [unknown, string | null], [unknown, string | null]];
    const [[, outbox], [, log], [, due], [, dropped]] = replies;
    return {
      pending: (outbox ?? []).flatMap((raw) => {
        const delivery = decodeDelivery(taskId, raw);
        return delivery ? [{ id: delivery.id, status: delivery.status, attempts: delivery.attempts }] : [];
      }),
      ...(due !== null && due !== undefined ? { nextAt: Number(due) } : {}),
      attempts: (log ?? []).flatMap((line) => {
        try {
          return [JSON.parse(line) as DeliveryAttempt];
        } catch {
          return [];
        }
      }),
      dropped: Number(dropped ?? 0),
    };
  }

  /** Attempts by outcome since the prefix began (every worker counts in Redis: the same on every replica). */
  async outcomes(): Promise<Record<WebhookOutcome, number>> {
    const values = await this.redis.hmget(this.counters, ...WEBHOOK_OUTCOMES);
    return Object.fromEntries(WEBHOOK_OUTCOMES.map((name, i) => [name, Number(values[i] ?? 0)])) as Record<
      WebhookOutcome,
      number
    >;
  }

  /** How many tasks have deliveries not made yet. */
  pendingTasks(): Promise<number> {
    return this.redis.zcard(this.keys.webhooksDue());
  }
}

/** The stored form: the facts transition-8.lua writes ({status, at, message}) and the attempts made ({n, first}). */
interface StoredDelivery {
  status: string;
  at: number;
  message?: string;
  n?: number;
  first?: number;
}

function decodeDelivery(taskId: string, raw: string): QueuedDelivery | undefined {
  let stored: StoredDelivery;
  try {
    stored = JSON.parse(raw) as StoredDelivery;
  } catch {
    return undefined;
  }
  if (!isTaskStatus(stored.status) || typeof stored.at !== 'number') return undefined;
  return {
    raw,
    id: deliveryId(taskId, stored.at),
    status: stored.status,
    at: stored.at,
    ...(typeof stored.message === 'string' && stored.message !== '' ? { statusMessage: stored.message } : {}),
    attempts: stored.n ?? 0,
    ...(stored.first !== undefined ? { firstAttemptAt: stored.first } : {}),
  };
}

function encodeDelivery(delivery: QueuedDelivery): string {
  const stored: StoredDelivery = { status: delivery.status, at: delivery.at };
  if (delivery.statusMessage !== undefined) stored.message = delivery.statusMessage;
  stored.n = delivery.attempts;
  if (delivery.firstAttemptAt !== undefined) stored.first = delivery.firstAttemptAt;
  return JSON.stringify(stored);
}
