// Events sent to tasks (docs/durable-execution.md, "Waits"): one use case for every sender, the api's HTTP endpoint,
// `mcpt signal` and a tool's ctx.signal. The event is checked (its name, its size), given to the task's wait or kept
// for its next one (WaitStore.signal), and a task woken by it has its parked job moved from BullMQ's delayed set to
// the queue, where any worker runs it. A parked input request whose answer came in is woken the same way.
import {
  InvalidInputError,
  InvalidStateError,
  LimitExceededError,
  TaskNotFoundError,
  toolQueueName,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { intFromEnv } from '@mcp-tasks/runtime';
import type { ExternalQueues } from '../external-queues.ts';
import type { TaskStore } from '../records/store.ts';

/** The bounds of events (docs/durable-execution.md, "Limits"), shared by every process that sends or keeps them. */
export const SignalEnvSchema = z.object({
  /** The most bytes of JSON one event's data may take. */
  EVENT_MAX_BYTES: intFromEnv(64 * 1024, { min: 16, max: 16 * 1024 * 1024 }),
  /** The most events kept for one task before it waits for them (a further one is refused). */
  EVENTS_MAX_KEPT: intFromEnv(16, { min: 1, max: 10_000 }),
});
export type SignalEnv = z.infer<typeof SignalEnvSchema>;
export const SIGNAL_DEFAULTS: SignalEnv = SignalEnvSchema.parse({});

/** An event's name: what `waitForEvent(name)` waits for, a path segment of the api's endpoint, a CLI argument. */
export const EVENT_NAME = /^[A-Za-z0-9._:-]{1,128}$/;

export interface SignalRequest {
  taskId: string;
  name: string;
  /** The event's data as JSON text (absent: none). */
  data?: string;
  /** The sender's owner, which must be the task's; absent for an operator or the task's callback token. */
  owner?: string;
}

/** What came of an event: it woke the task (`delivered`), or is kept for its next wait (`kept` events now). */
export type SignalOutcome = { delivered: true } | { delivered: false; kept: number };

export class TaskSignals {
  constructor(
    private readonly store: TaskStore,
    private readonly queues: ExternalQueues,
    private readonly limits: SignalEnv,
  ) {}

  /**
   * Sends an event. Refused with InvalidInputError (a bad name), LimitExceededError (data too large, too many events
   * kept), TaskNotFoundError (no such task of `owner`: the same answer as an unknown id) or InvalidStateError (the task
   * has ended).
   */
  async send(request: SignalRequest): Promise<SignalOutcome> {
    const { taskId, name, data, owner } = request;
    if (!EVENT_NAME.test(name)) {
      throw new InvalidInputError(
        `An event's name is 1 to 128 letters, digits, '.', '_', ':' or '-'; got ${JSON.stringify(name.slice(0, 140))}`,
      );
    }
    if (data !== undefined) {
      const bytes = Buffer.byteLength(data, 'utf8');
      if (bytes > this.limits.EVENT_MAX_BYTES) {
        throw new LimitExceededError(
          'EVENT_MAX_BYTES',
          this.limits.EVENT_MAX_BYTES,
          `The event's data takes ${bytes} bytes of JSON; at most ${this.limits.EVENT_MAX_BYTES} are kept ` +
            '(EVENT_MAX_BYTES): send a reference (a URL, a row id) instead of the data',
          { bytes },
        );
      }
    }
    const reply = await this.store.waits.signal(taskId, {
      ...(owner !== undefined ? { owner } : {}),
      name,
      at: Date.now(),
      ...(data !== undefined ? { data } : {}),
      maxKept: this.limits.EVENTS_MAX_KEPT,
    });
    switch (reply.verdict) {
      case 'delivered':
        await this.wake(taskId, toolQueueName(reply.tool));
        return { delivered: true };
      case 'kept':
        return { delivered: false, kept: reply.count };
      case 'full':
        throw new LimitExceededError(
          'EVENTS_MAX_KEPT',
          this.limits.EVENTS_MAX_KEPT,
          `Task ${taskId} keeps ${reply.count} events that no wait has taken yet, the most EVENTS_MAX_KEPT allows`,
        );
      case 'ended':
        throw new InvalidStateError(`Task ${taskId} is ${reply.status}: it takes no more events`, reply.status);
      case 'missing':
        throw new TaskNotFoundError();
    }
  }

  /**
   * Moves a parked task's job from the delayed set to the queue, so that a worker runs it now. A job not parked yet
   * (its worker is still moving it) is left: that worker looks, once the job is parked, whether the wait has its
   * outcome, and wakes it then (conclude-run.ts).
   */
  async wake(taskId: string, queue: string): Promise<void> {
    const job = await this.queues.get(queue).getJob(taskId);
    await job?.promote().catch(() => undefined);
  }
}
