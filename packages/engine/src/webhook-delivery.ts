// The workers' webhook delivery loop (docs/webhooks.md). A task's transition queues its delivery in the same step
// (transition-8.lua); a loop claims the tasks whose next delivery is due, under a lease (claim-due-1.lua), posts the
// head of each one's outbox, signed (Standard Webhooks), and settles the attempt while its claim holds
// (settle-webhook-4.lua): delivered, retried after a backoff, or given up. One claim per task at a time keeps each
// task's deliveries in order; a worker killed mid-attempt leaves its claims to expire, and the next claimer sends the
// same delivery again with the same webhook-id (at least once).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import {
  InvalidInputError,
  modernDetailedTask,
  RunnerMeta,
  TaskStatus,
  toModernTask,
  type InputRequest,
  type TaskRecord,
  type WebhookTarget,
} from '@mcp-tasks/protocol';
import type { KeySpace } from './keys.ts';
import type { Logger } from './logger.ts';
import { isConnectionError } from './redis-log.ts';
import type { TaskStore } from './records/store.ts';
import type { DeliveryAttempt, DeliverySettlement, QueuedDelivery, WebhookOutbox } from './records/webhooks.ts';
import type { SessionEvents } from './session-events.ts';
import type { Subscriber } from './subscriber.ts';
import type { DeliveryBounds, WebhookSettings } from './webhook-settings.ts';
import { webhookSignature } from './webhook-signing.ts';

/** What an attempt's answer keeps of the receiver's body, for operators. */
const ERROR_BODY_CHARS = 200;
/** The most of an answer's body read before the connection is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;
const USER_AGENT = 'mcp-task-runner-webhooks';

/**
 * How long a claim holds a task: twice an attempt's time plus 2 s, so that a live worker's attempt always ends (its
 * timeout) well before another may claim the task, while a killed worker's deliveries wait only that long.
 */
export function deliveryLeaseMs(bounds: Pick<DeliveryBounds, 'timeoutMs'>): number {
  return 2 * bounds.timeoutMs + 2000;
}

/** The wait before retry number `attempt` (1 after the first failure): doubling from backoffMs, capped, + up to 20 %. */
export function retryDelayMs(bounds: Pick<DeliveryBounds, 'backoffMs' | 'backoffMaxMs'>, attempt: number): number {
  const base = Math.min(bounds.backoffMaxMs, bounds.backoffMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(base * (1 + Math.random() * 0.2));
}

/**
 * The body of a delivery: the task as 2026-07-28's tasks/get renders it (modern.ts), with the status, time and
 * message of the change it carries (the record may have moved on since), its result inline once completed. Past
 * `maxBytes` the result, error and input requests are left out, and `_meta` says so with the size they made.
 */
export function webhookBody(
  record: TaskRecord,
  delivery: Pick<QueuedDelivery, 'status' | 'at' | 'statusMessage'>,
  inputs: Record<string, InputRequest>,
  maxBytes: number,
): string {
  const { statusMessage: _current, ...rest } = record;
  const facts: TaskRecord = {
    ...rest,
    status: delivery.status,
    lastUpdatedAt: delivery.at,
    ...(delivery.statusMessage !== undefined ? { statusMessage: delivery.statusMessage } : {}),
  };
  // A change to input_required delivered after its requests were answered: still that change, with nothing to answer
  // (tasks/get would show the task working by then).
  const detailed =
    facts.status === TaskStatus.InputRequired && Object.keys(inputs).length === 0
      ? { resultType: 'complete', ...toModernTask(facts) }
      : modernDetailedTask(facts, inputs);
  const body = JSON.stringify(detailed);
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes <= maxBytes) return body;
  const { result: _result, error: _error, inputRequests: _inputs, _meta: meta, ...kept } = detailed;
  const own = typeof meta === 'object' && meta !== null ? meta : {};
  return JSON.stringify({ ...kept, _meta: { ...own, [RunnerMeta.ResultOmitted]: { bytes } } });
}

/** What one attempt came to. */
interface Answer {
  ok: boolean;
  /** Not worth retrying: a refused target, a redirect, a 4xx other than 408 and 429, no secret. */
  permanent: boolean;
  code?: number;
  error?: string;
}

export interface WebhookDeliveryOptions {
  /** The worker's name, in each attempt's log entry. */
  worker: string;
  settings: WebhookSettings;
  log: Logger;
}

export class WebhookDelivery {
  readonly #outbox: WebhookOutbox;
  readonly #bounds: DeliveryBounds;
  readonly #leaseMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stopping = new AbortController();
  readonly #agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  #kick: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(
    private readonly store: TaskStore,
    private readonly events: SessionEvents,
    private readonly subscriber: Subscriber,
    private readonly keys: KeySpace,
    private readonly options: WebhookDeliveryOptions,
  ) {
    this.#outbox = store.webhooks;
    this.#bounds = options.settings.bounds;
    this.#leaseMs = deliveryLeaseMs(this.#bounds);
  }

  /** Starts the loop once its wake-up channel is subscribed (a delivery queued from then on wakes it). */
  async start(): Promise<void> {
    const waiter = await this.subscriber.waiter(this.keys.webhooksChannel());
    this.#loop = this.#run(waiter).finally(() => waiter.close());
  }

  /** Stops claiming, and waits for the attempts under way (each ends within WEBHOOK_TIMEOUT_MS). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
    await Promise.all(this.#inFlight);
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  async #run(waiter: Awaited<ReturnType<Subscriber['waiter']>>): Promise<void> {
    const stopping = this.#stopping.signal;
    while (!stopping.aborted) {
      const free = this.#bounds.concurrency - this.#inFlight.size;
      let claimed = 0;
      if (free > 0) {
        const now = Date.now();
        const leaseEnd = now + this.#leaseMs;
        const ids = await this.#outbox.claim(now, free, leaseEnd).catch((error: unknown) => {
          // Redis away: the process's connection log tells that story once (redis-log.ts).
          if (!isConnectionError(error))
            this.options.log.warn('webhook deliveries not claimed', { error: String(error) });
          return [];
        });
        claimed = ids.length;
        for (const taskId of ids) this.#track(this.#deliver(taskId, leaseEnd));
      }
      // All it asked for: more may be due at once.
      if (free > 0 && claimed === free) continue;
      const kicked = new AbortController();
      this.#kick = () => kicked.abort();
      await waiter.next(this.#bounds.pollMs, AbortSignal.any([stopping, kicked.signal]));
      this.#kick = undefined;
    }
  }

  #track(delivery: Promise<void>): void {
    const tracked = delivery
      .catch((error: unknown) => {
        // Not settled: the claim's lease ends and the delivery is attempted again.
        if (!isConnectionError(error)) this.options.log.warn('webhook delivery failed', { error: String(error) });
      })
      .finally(() => {
        this.#inFlight.delete(tracked);
        // A slot freed, and the task's next delivery may be due now.
        this.#kick?.();
      });
    this.#inFlight.add(tracked);
  }

  /** One attempt of the head of `taskId`'s outbox, settled while the claim ending at `leaseEnd` holds. */
  async #deliver(taskId: string, leaseEnd: number): Promise<void> {
    const { raw, head, record } = await this.#outbox.head(taskId);
    const { logMax } = this.#bounds;
    if (!record) {
      await this.#outbox.settle({ taskId, createdAt: 0, ttl: 0 }, leaseEnd, undefined, { outcome: 'expired' }, logMax);
      return;
    }
    if (raw === undefined) {
      await this.#outbox.settle(record, leaseEnd, undefined, { outcome: 'empty' }, logMax);
      return;
    }
    const delivery: QueuedDelivery = head ?? {
      raw,
      id: `${taskId}_unreadable`,
      status: record.status,
      at: 0,
      attempts: 0,
    };
    const started = Date.now();
    const answer = head
      ? await this.#send(record, delivery)
      : { ok: false, permanent: true, error: 'the queued delivery is unreadable' };
    const settlement = this.#settlementOf(record, delivery, answer, started);
    const settled = await this.#outbox.settle(record, leaseEnd, delivery, settlement, logMax);
    this.#report(record, settlement, settled);
  }

  /** Delivered, retried after the backoff, or given up (a permanent failure, or no attempt or time left). */
  #settlementOf(record: TaskRecord, delivery: QueuedDelivery, answer: Answer, started: number): DeliverySettlement {
    const now = Date.now();
    const attempt: DeliveryAttempt = {
      id: delivery.id,
      status: delivery.status,
      attempt: delivery.attempts + 1,
      at: started,
      outcome: answer.ok ? 'delivered' : 'failed',
      ...(answer.code !== undefined ? { code: answer.code } : {}),
      ...(answer.error !== undefined ? { error: answer.error } : {}),
      ms: now - started,
      worker: this.options.worker,
    };
    if (answer.ok) return { outcome: 'delivered', attempt };
    const giveUp = (why: string): DeliverySettlement => ({
      outcome: 'abandoned',
      attempt: { ...attempt, outcome: 'abandoned', error: `${answer.error ?? 'failed'}; given up: ${why}` },
    });
    if (answer.permanent) return giveUp('not worth retrying');
    const { maxAttempts, retryForMs } = this.#bounds;
    if (attempt.attempt >= maxAttempts) return giveUp(`${maxAttempts} attempts made (WEBHOOK_MAX_ATTEMPTS)`);
    const nextAt = now + retryDelayMs(this.#bounds, attempt.attempt);
    if (nextAt > (delivery.firstAttemptAt ?? started) + retryForMs) {
      return giveUp(`retried for ${retryForMs} ms (WEBHOOK_RETRY_FOR_MS)`);
    }
    if (nextAt >= record.createdAt + record.ttl) return giveUp('the task expires before the next attempt');
    return { outcome: 'retry', attempt: { ...attempt, nextAt }, nextAt };
  }

  #report(record: TaskRecord, settlement: DeliverySettlement, settled: boolean): void {
    if (!('attempt' in settlement)) return;
    const { log } = this.options;
    const { attempt } = settlement;
    const fields = {
      taskId: record.taskId,
      webhookId: attempt.id,
      status: attempt.status,
      attempt: attempt.attempt,
      ...(attempt.code !== undefined ? { code: attempt.code } : {}),
      ...(attempt.error !== undefined ? { error: attempt.error } : {}),
      ...(settled ? {} : { settled: 'no: another worker claimed the task meanwhile' }),
    };
    if (settlement.outcome === 'delivered') {
      if (log.isDebugEnabled()) log.debug('webhook delivered', fields);
    } else if (settlement.outcome === 'retry') {
      log.warn('webhook delivery failed; retrying', { ...fields, nextAt: new Date(settlement.nextAt).toISOString() });
    } else {
      log.warn('webhook delivery given up', fields);
    }
  }

  /** Posts the delivery, signed; what came of it. */
  async #send(record: TaskRecord, delivery: QueuedDelivery): Promise<Answer> {
    const webhook = record.webhook;
    if (!webhook) return { ok: false, permanent: true, error: 'the task has no webhook' };
    const keys = this.options.settings.keysFor(record.owner);
    if (!keys) return { ok: false, permanent: true, error: 'no signing secret (WEBHOOK_SECRET) on this worker' };
    const inputs =
      delivery.status === TaskStatus.InputRequired && record.status === TaskStatus.InputRequired
        ? await this.events.outstandingInputs(record)
        : {};
    const body = webhookBody(record, delivery, inputs, this.#bounds.maxBodyBytes);
    const timestamp = Math.floor(Date.now() / 1000);
    try {
      return await this.#post(webhook, body, {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': webhookSignature(keys, delivery.id, timestamp, body),
      });
    } catch (error) {
      if (error instanceof InvalidInputError) return { ok: false, permanent: true, error: error.message };
      return { ok: false, permanent: false, error: describeFailure(error) };
    }
  }

  /** One POST within WEBHOOK_TIMEOUT_MS, to a target the SSRF rules allow; redirects are answers, not followed. */
  #post(webhook: WebhookTarget, body: string, headers: Record<string, string>): Promise<Answer> {
    const { targets } = this.options.settings;
    const where = 'webhook';
    targets.checkLiteral(webhook.url, where);
    const https = webhook.url.startsWith('https:');
    return new Promise<Answer>((resolve, reject) => {
      const request = (https ? httpsRequest : httpRequest)(
        webhook.url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body, 'utf8')) },
          agent: https ? this.#agents.https : this.#agents.http,
          lookup: targets.lookupFor(webhook.url, where),
          signal: AbortSignal.timeout(this.#bounds.timeoutMs),
        },
        (response) => {
          readAnswer(response).then((text) => resolve(answerOf(response, text)), reject);
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  }
}

/** The first characters of an answer's body (the rest is read and dropped, up to a limit). */
async function readAnswer(response: IncomingMessage): Promise<string> {
  let text = '';
  let bytes = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (text.length < ERROR_BODY_CHARS) text += chunk.toString('utf8');
    if (bytes > MAX_ANSWER_BYTES) {
      response.destroy();
      break;
    }
  }
  return text.slice(0, ERROR_BODY_CHARS);
}

/** 2xx delivered; 5xx, 408 and 429 retried; a redirect or any other 4xx given up (docs/webhooks.md). */
function answerOf(response: IncomingMessage, text: string): Answer {
  const code = response.statusCode ?? 0;
  if (code >= 200 && code < 300) return { ok: true, permanent: false, code };
  const said = text.trim() === '' ? '' : `: ${text.trim()}`;
  if (code >= 300 && code < 400) {
    const location = response.headers.location;
    return {
      ok: false,
      permanent: true,
      code,
      error: `HTTP ${code}, a redirect${location ? ` to ${location}` : ''}: redirects are not followed`,
    };
  }
  const retried = code >= 500 || code === 408 || code === 429;
  return { ok: false, permanent: !retried, code, error: `HTTP ${code}${said}` };
}

function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'no answer within WEBHOOK_TIMEOUT_MS';
    const code = (error as NodeJS.ErrnoException).code;
    return code !== undefined ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
