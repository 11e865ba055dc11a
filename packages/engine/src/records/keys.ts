// The Redis keys of a task record and of the indexes it belongs to. Only the records module (this folder) uses
// them; everything else asks the TaskStore. They start with the KeySpace prefix, so a prefix with a hash tag keeps
// them in the one Redis Cluster slot of every other key of the runner.
import type { WaitKind } from '@mcp-tasks/protocol';
import type { KeySpace } from '../keys.ts';

export class TaskKeys {
  readonly #prefix: string;

  constructor(keys: KeySpace) {
    this.#prefix = keys.prefix;
  }

  /**
   * Hash: the task record. Our ids are UUIDs, but a client may send any text as one: with a `:` it would name another
   * key of a task (`<id>:children` is a set), and reading that failed with a Redis type error, an answer an unknown
   * id does not get (an existence oracle). Such an id names a key no task has, so it is not found like any other.
   */
  record(taskId: string): string {
    return `${this.#prefix}:task:${taskId.includes(':') ? taskId.replaceAll(':', '\u0000') : taskId}`;
  }

  /** Sorted set (all scores 0, members ordered by creation): the tasks of one owner, for tasks/list. */
  ownerIndex(owner: string): string {
    return `${this.#prefix}:owner:${owner}`;
  }

  /** Sorted set like ownerIndex, across every owner and kind: what operators list (CLI, dashboard). */
  allTasks(): string {
    return `${this.#prefix}:all-tasks`;
  }

  /** Sorted set scored by expiry time: what the janitor deletes and when. */
  expiries(): string {
    return `${this.#prefix}:expiries`;
  }

  /** Sorted set of non-terminal tasks scored by lastUpdatedAt: what the reconciler checks against BullMQ. */
  live(): string {
    return `${this.#prefix}:live`;
  }

  /**
   * Set: the ids of the task's input requests still outstanding (transition-8.lua keeps it with the count of them),
   * so that a new attempt can withdraw what an earlier one left. It expires with the task.
   */
  inputs(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:inputs`;
  }

  /** Sorted set: an owner's unfinished tasks scored by expiry, for the cap on tasks per owner (MAX_TASKS_PER_OWNER). */
  ownerLive(owner: string): string {
    return `${this.#prefix}:owner-live:${owner}`;
  }

  /**
   * Hash: what the task's tool keeps durably (docs/durable-execution.md): `checkpoint`, step results `s:<name>`, child
   * task ids `c:<key>`. Kept apart from the record, which tasks/get reads whole; it expires with the task.
   */
  durable(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:durable`;
  }

  /** Set: the ids of the task's child tasks (ctx.callTool), which a cancel of the task cancels too. */
  children(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:children`;
  }

  /**
   * List: the task's webhook deliveries still to make, oldest first (JSON facts of the change each carries), appended by
   * transition-8.lua in the step of the change; the head is the one being delivered (docs/webhooks.md). It expires
   * with the task.
   */
  webhookOutbox(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:webhooks`;
  }

  /** List: the task's last delivery attempts (JSON), for operators (mcpt inspect, the dashboard). It expires with the task. */
  webhookLog(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:webhook-log`;
  }

  /**
   * Sorted set: the tasks with webhook deliveries to make, scored by when the next may start (now, a retry's backoff) or,
   * while a worker delivers, by the end of its lease (claim-due-1.lua): what the delivery loops claim.
   */
  webhooksDue(): string {
    return `${this.#prefix}:webhooks:due`;
  }

  /**
   * List: the events sent to the task that no wait of its tool has taken yet (docs/durable-execution.md, "Waits"),
   * oldest first, each the JSON `{name, at, data}`; bounded by EVENTS_MAX_KEPT, it expires with the task.
   */
  signals(taskId: string): string {
    return `${this.#prefix}:task:${taskId}:signals`;
  }

  /** Sorted set: the parked tasks waiting for `kind` (sleep, event, input), scored by until when (epoch ms). */
  waiting(kind: WaitKind): string {
    return `${this.#prefix}:waiting:${kind}`;
  }

  /** Hash: an owner's idempotency keys (tools/call), key -> JSON [taskId, digest of the call, expiry]. */
  idempotencyKeys(owner: string): string {
    return `${this.#prefix}:idempotency:${owner}`;
  }

  /** Sorted set: an owner's idempotency keys scored by when each was filed: the oldest give way past the cap. */
  idempotencyOrder(owner: string): string {
    return `${this.#prefix}:idempotency-order:${owner}`;
  }
}
