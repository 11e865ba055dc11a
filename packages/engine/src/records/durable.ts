// What a running tool keeps beside its task's record (docs/durable-execution.md): its checkpoint, its steps' results
// and the ids of its child tasks, each step and child call with its facts (when, how long, which attempt, how large;
// a call's tool and the digest of its arguments), in one hash per task that expires with the record (save-durable-3.lua
// writes it, create-task-6.lua files child tasks in it and copies it for a resumed task), and the set of its children
// that a cancel of the task cancels too.
import { LimitExceededError, LocalError, LocalErrorCode, type TaskRecord, type TaskStatus } from '@mcp-tasks/protocol';
import type { RedisClient } from '../redis.ts';
import { type ParentCall, type ParentRefusal, RedisScripts, type ResumeCall, type ResumeRefusal } from '../scripts.ts';
import type { TaskKeys } from './keys.ts';

const CHECKPOINT_FIELD = 'checkpoint';
const STEP_PREFIX = 's:';
const CHILD_PREFIX = 'c:';
/** The facts of the step or child call whose field follows (`f:s:<name>`, `f:c:<key>`). */
const FACTS_PREFIX = 'f:';
/** Facts read per HSCAN round trip (a small hash answers whole in one). */
const FACTS_SCAN_COUNT = 1000;

/** A child call filed under its key: its task, and (filed since calls have facts) its tool and digest. */
export interface FiledCall {
  taskId: string;
  tool?: string;
  /** The digest of the call (protocol's callDigest of its tool and the arguments the tool passed). */
  digest?: string;
}

/** Waits (records/waits.ts): sleeps, event waits, parked input requests, and the tries of steps with a retry policy. */
const WAIT_PREFIX = 'w:';

/** What a task keeps durably, as an attempt reads it once before its tool runs: JSON texts by name. */
export interface DurableSnapshot {
  /** The last checkpoint's JSON, if any. */
  checkpoint: string | undefined;
  /** Step results (JSON) by step name. */
  steps: Map<string, string>;
  /** Child calls by call key. */
  children: Map<string, FiledCall>;
  /** Waits by key (records/waits.ts): their JSON. */
  waits: Map<string, string>;
}

export const EMPTY_SNAPSHOT: DurableSnapshot = Object.freeze({
  checkpoint: undefined,
  steps: new Map<string, string>(),
  children: new Map<string, FiledCall>(),
  waits: new Map<string, string>(),
});

/**
 * One step or child call as its facts say (for operators: `mcpt inspect`, the dashboard). Bounded: a name of at most
 * 256 characters and a few numbers each, at most DURABLE_MAX_STEPS of them per task.
 */
export interface DurableEntry {
  kind: 'step' | 'call';
  /** The step's name or the call's key. */
  name: string;
  /** Its order among the task's steps and calls as they were stored (the hash's size then). */
  order: number;
  /** When the step's function started, or the child task was created (epoch ms). */
  at: number;
  /** The attempt that stored it. */
  attempt: number;
  /** A step: how long its function ran (ms). */
  ms?: number;
  /** A step: the size of its result (bytes of JSON). */
  bytes?: number;
  /** A call: its tool and child task. */
  tool?: string;
  taskId?: string;
  /** Carried over from the failed task that stored it (`mcpt retry --resume`). */
  from?: string;
}

/** A write by one attempt: a checkpoint (replaced each time) or a step's result (stored once). */
export interface DurableWrite {
  attempt: number;
  /** `checkpoint`, or the step's name. */
  kind: 'checkpoint' | 'step';
  name?: string;
  json: string;
  /** The most steps and child tasks the task may keep (DURABLE_MAX_STEPS). */
  maxEntries: number;
  /** A step: when its function started (epoch ms) and how long it ran (ms), for operators. */
  startedAt?: number;
  durationMs?: number;
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
      else if (field.startsWith(CHILD_PREFIX)) {
        const facts = parseFacts(hash[FACTS_PREFIX + field]);
        snapshot.children.set(field.slice(CHILD_PREFIX.length), {
          taskId: value,
          ...(typeof facts?.['tool'] === 'string' ? { tool: facts['tool'] } : {}),
          ...(typeof facts?.['digest'] === 'string' ? { digest: facts['digest'] } : {}),
        });
      } else if (field.startsWith(WAIT_PREFIX)) snapshot.waits.set(field.slice(WAIT_PREFIX.length), value);
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
      ...(checkpoint
        ? {}
        : {
            facts: JSON.stringify({
              at: write.startedAt ?? Date.now(),
              ms: write.durationMs ?? 0,
              attempt: write.attempt,
              bytes: Buffer.byteLength(write.json, 'utf8'),
            }),
          }),
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

  /** The facts a child call is filed with (create-task-6.lua's `parent.facts`; the script adds its order and task). */
  callFacts(call: { tool: string; digest: string; attempt: number; at: number }): string {
    // The digest first: the script finds it by a pattern, before any text the tool's name could hold.
    return JSON.stringify({ digest: call.digest, at: call.at, attempt: call.attempt, tool: call.tool });
  }

  /** What create-task-6.lua needs to copy the durable state of failed task `taskId` into new task `copyTo`. */
  resumeKeys(taskId: string, copyTo: string): ResumeCall['keys'] {
    return { record: this.keys.record(taskId), durable: this.keys.durable(taskId), copy: this.keys.durable(copyTo) };
  }

  /**
   * The task's steps and child calls as their facts say, in the order they started (then stored). Reads the facts
   * only (HSCAN): never the results. Steps and calls stored before facts were kept are left out.
   */
  async entries(taskId: string): Promise<DurableEntry[]> {
    const key = this.keys.durable(taskId);
    const entries: DurableEntry[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'MATCH', `${FACTS_PREFIX}*`, 'COUNT', FACTS_SCAN_COUNT);
      cursor = next;
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const entry = entryOf(String(flat[i]).slice(FACTS_PREFIX.length), String(flat[i + 1]));
        if (entry) entries.push(entry);
      }
    } while (cursor !== '0');
    return entries.sort((a, b) => a.at - b.at || a.order - b.order);
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

function parseFacts(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const facts = JSON.parse(text) as unknown;
    return facts !== null && typeof facts === 'object' ? (facts as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** An entry from the field its facts are about (`s:<name>`, `c:<key>`) and the facts. */
function entryOf(field: string, text: string): DurableEntry | undefined {
  const facts = parseFacts(text);
  if (!facts) return undefined;
  const number = (name: string) => (typeof facts[name] === 'number' ? facts[name] : undefined);
  const string = (name: string) => (typeof facts[name] === 'string' ? facts[name] : undefined);
  const kind = field.startsWith(STEP_PREFIX) ? 'step' : field.startsWith(CHILD_PREFIX) ? 'call' : undefined;
  if (kind === undefined) return undefined;
  const entry: DurableEntry = {
    kind,
    name: field.slice(STEP_PREFIX.length), // a child's prefix is as long
    order: number('n') ?? 0,
    at: number('at') ?? 0,
    attempt: number('attempt') ?? 0,
  };
  const optional = {
    ms: number('ms'),
    bytes: number('bytes'),
    tool: string('tool'),
    taskId: string('task'),
    from: string('from'),
  };
  for (const [name, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(entry, { [name]: value });
  }
  return entry;
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
        `Task ${taskId} keeps ${detail ?? 'too many'} step results and child tasks already, the most ` +
          `DURABLE_MAX_STEPS allows: it cannot ${verb}`,
        context,
      );
  }
}

/** Why a failed task cannot be resumed (include/resume.lua), as the LocalError an operator's command reports. */
export function resumeRefusal(taskId: string, reason: ResumeRefusal, detail: string | undefined): LocalError {
  switch (reason) {
    case 'missing':
      return new LocalError(
        LocalErrorCode.TaskNotFound,
        `Task ${taskId} not found (it never existed, expired or was purged)`,
        { taskId },
      );
    case 'not-failed':
      return new LocalError(
        LocalErrorCode.NotAllowed,
        `Task ${taskId} is ${detail ?? 'not failed'}; only failed tasks can be resumed`,
        { taskId },
      );
    case 'resumed':
      return new LocalError(
        LocalErrorCode.NotAllowed,
        `Task ${taskId} was resumed already, by task ${detail ?? '?'}: a failed task is continued once (resume ` +
          'that one if it failed, or retry without --resume to start over)',
        { taskId, resumedBy: detail },
      );
  }
}
