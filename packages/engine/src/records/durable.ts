// What a running tool keeps beside its task's record (docs/durable-execution.md): its checkpoint, its steps' results
// and the ids of its child tasks, in one hash per task that expires with the record (save-durable-3.lua writes it,
// create-task-6.lua files child tasks in it), and the set of its children that a cancel of the task cancels too.
import { LimitExceededError, LocalError, LocalErrorCode, type TaskRecord, type TaskStatus } from '@mcp-tasks/protocol';
import type { RedisClient } from '../redis.ts';
import { type ParentCall, type ParentRefusal, RedisScripts } from '../scripts.ts';
import type { TaskKeys } from './keys.ts';

const CHECKPOINT_FIELD = 'checkpoint';
const STEP_PREFIX = 's:';
const CHILD_PREFIX = 'c:';
/** Waits (records/waits.ts): sleeps, event waits, parked input requests, and the tries of steps with a retry policy. */
const WAIT_PREFIX = 'w:';

/** What a task keeps durably, as an attempt reads it once before its tool runs: JSON texts by name. */
export interface DurableSnapshot {
  /** The last checkpoint's JSON, if any. */
  checkpoint: string | undefined;
  /** Step results (JSON) by step name. */
  steps: Map<string, string>;
  /** Child task ids by call key. */
  children: Map<string, string>;
  /** Waits by key (records/waits.ts): their JSON. */
  waits: Map<string, string>;
}

export const EMPTY_SNAPSHOT: DurableSnapshot = Object.freeze({
  checkpoint: undefined,
  steps: new Map<string, string>(),
  children: new Map<string, string>(),
  waits: new Map<string, string>(),
});

/** A write by one attempt: a checkpoint (replaced each time) or a step's result (stored once). */
export interface DurableWrite {
  attempt: number;
  /** `checkpoint`, or the step's name. */
  kind: 'checkpoint' | 'step';
  name?: string;
  json: string;
  /** The most fields the task's hash may hold (DURABLE_MAX_STEPS). */
  maxEntries: number;
  /** The most bytes its checkpoint and step results may take together (DURABLE_MAX_TOTAL_BYTES). */
  maxTotalBytes: number;
}

/** A stored write; a step stored already (by a concurrent earlier attempt) answers its first result. */
export type DurableSaved = { stored: true } | { stored: false; value: string };

/** What operators see of a task's durable state beyond its record's facts. */
export interface DurableCounts {
  steps: number;
  children: string[];
}

export class DurableStore {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: TaskKeys,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /** Everything the task keeps, in one read (an attempt reads it only when the record says there is some). */
  async snapshot(taskId: string): Promise<DurableSnapshot> {
    const hash = await this.redis.hgetall(this.keys.durable(taskId));
    const snapshot: DurableSnapshot = {
      checkpoint: undefined,
      steps: new Map(),
      children: new Map(),
      waits: new Map(),
    };
    for (const [field, value] of Object.entries(hash)) {
      if (field === CHECKPOINT_FIELD) snapshot.checkpoint = value;
      else if (field.startsWith(STEP_PREFIX)) snapshot.steps.set(field.slice(STEP_PREFIX.length), value);
      else if (field.startsWith(CHILD_PREFIX)) snapshot.children.set(field.slice(CHILD_PREFIX.length), value);
      else if (field.startsWith(WAIT_PREFIX)) snapshot.waits.set(field.slice(WAIT_PREFIX.length), value);
    }
    return snapshot;
  }

  /**
   * Stores a checkpoint or a step's result for the attempt; refused with a LocalError the tool may catch once a later
   * attempt runs the task (`attempt-superseded`), the task has ended (`task-ended`) or its hash is full
   * (`durable-full`).
   */
  async save(task: Pick<TaskRecord, 'taskId'>, write: DurableWrite): Promise<DurableSaved> {
    const { taskId } = task;
    const checkpoint = write.kind === 'checkpoint';
    const reply = await this.#scripts.saveDurable({
      keys: { record: this.keys.record(taskId), durable: this.keys.durable(taskId), live: this.keys.live() },
      taskId,
      attempt: write.attempt,
      field: checkpoint ? CHECKPOINT_FIELD : `${STEP_PREFIX}${write.name ?? ''}`,
      value: write.json,
      bytes: Buffer.byteLength(write.json, 'utf8'),
      now: Date.now(),
      checkpoint,
      maxEntries: write.maxEntries,
      maxTotalBytes: write.maxTotalBytes,
    });
    switch (reply.verdict) {
      case 'ok':
        return { stored: true };
      case 'exists':
        return { stored: false, value: reply.value };
      case 'missing':
        throw durableRefusal(taskId, 'missing', undefined, write.kind);
      case 'ended':
        throw durableRefusal(taskId, 'ended', reply.status, write.kind);
      case 'stale':
        throw durableRefusal(taskId, 'stale', String(reply.attempt), write.kind);
      case 'full':
        throw durableRefusal(taskId, 'full', String(reply.count), write.kind);
      case 'over':
        throw new LocalError(
          LocalErrorCode.DurableFull,
          `Task ${taskId} would keep ${reply.bytes} bytes of checkpoint and step results with this ${write.kind}, ` +
            `more than the ${write.maxTotalBytes} DURABLE_MAX_TOTAL_BYTES allows: keep references (a file, a row) ` +
            'instead of the data',
          { taskId, bytes: reply.bytes, max: write.maxTotalBytes },
        );
    }
  }

  /** The keys create-task-6.lua needs of a parent to file a child task in it. */
  parentKeys(taskId: string): ParentCall['keys'] {
    return {
      record: this.keys.record(taskId),
      durable: this.keys.durable(taskId),
      children: this.keys.children(taskId),
    };
  }

  /** The call key's field in the parent's hash (create-task-6.lua's `parent.field`). */
  childField(key: string): string {
    return `${CHILD_PREFIX}${key}`;
  }

  /** The ids of the task's child tasks (those a cancel of the task cancels too). */
  children(taskId: string): Promise<string[]> {
    return this.redis.smembers(this.keys.children(taskId));
  }

  /** How many step results the task keeps, and its children: for operators. */
  async counts(taskId: string): Promise<DurableCounts> {
    const [fields, children] = await Promise.all([
      this.redis.hkeys(this.keys.durable(taskId)),
      this.redis.smembers(this.keys.children(taskId)),
    ]);
    return { steps: fields.filter((field) => field.startsWith(STEP_PREFIX)).length, children };
  }
}

/**
 * Why a task cannot keep (or start) what it asked for, as the LocalError its tool gets: `what` is what it tried
 * (a checkpoint, a step, or a child task by default).
 */
export function durableRefusal(
  taskId: string,
  reason: ParentRefusal,
  detail: string | undefined,
  what: 'checkpoint' | 'step' | 'child task' = 'child task',
): LocalError {
  const context = { taskId, ...(detail !== undefined ? { detail } : {}) };
  const verb = what === 'child task' ? `start a ${what}` : `save a ${what}`;
  switch (reason) {
    case 'missing':
      return new LocalError(
        LocalErrorCode.TaskEnded,
        `Task ${taskId} expired or was deleted: it cannot ${verb}`,
        context,
      );
    case 'ended':
      return new LocalError(
        LocalErrorCode.TaskEnded,
        `Task ${taskId} is ${(detail as TaskStatus | undefined) ?? 'ended'}: it cannot ${verb}`,
        context,
      );
    case 'stale':
      return new LocalError(
        LocalErrorCode.AttemptSuperseded,
        `A later attempt (${detail ?? '?'}) runs task ${taskId} now: this one can no longer ${verb}`,
        context,
      );
    case 'children':
      return new LimitExceededError(
        'children_per_task',
        Number(detail),
        `Task ${taskId} has started ${detail ?? 'as many'} child tasks, the most MAX_CHILDREN_PER_TASK allows ` +
          `(set on the api, inherited by every child): it cannot ${verb}`,
        context,
      );
    case 'full':
      return new LocalError(
        LocalErrorCode.DurableFull,
        `Task ${taskId} keeps ${detail ?? 'too many'} checkpoints, step results and child tasks already, the most ` +
          `DURABLE_MAX_STEPS allows: it cannot ${verb}`,
        context,
      );
  }
}
