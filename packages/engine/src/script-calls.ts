// The calls of our Redis scripts and their replies, as RedisScripts (scripts.ts) takes and answers them: one interface
// per script's named keys and arguments, one union per reply. Types only, kept apart from the registry so that each
// script's contract reads in one place.
import type { TaskStatus } from '@mcp-tasks/protocol';
import type { OpeningCall, Opened, RateBucket } from './request-opening.ts';
import type { Reply } from './script-replies.ts';

export interface CreateTaskCall {
  keys: {
    record: string;
    live: string;
    allTasks: string;
    expiries: string;
    ownerIndex: string;
    ownerLive: string;
  };
  taskId: string;
  expiresAt: number;
  now: number;
  /** The most unfinished tasks the owner may have, this one included; undefined: no cap. */
  maxLive: number | undefined;
  member: string;
  /** Listed in the owner's index (a task, not a plain call). */
  listed: boolean;
  expiryEntry: string;
  /** The tool's fair order between principals: the job's priority is computed in the same step. */
  fair?: FairOrderCall;
  /** Opens the request in the same step (a session whose fields the caller holds): see RequestOpening. */
  open?: OpeningCall;
  /** The task's BullMQ job, added in the same step; a prioritized one takes the priority of `fair` (required). */
  job?: ScriptedJob;
  /** A 2026-07-28 request's context (sessions.ts), stored in the same step: only for an admitted task. */
  context?: { keys: { hash: string }; fields: Record<string, string> };
  /** The call's idempotency key: a live task filed under it is answered instead (include/idempotency.lua). */
  idempotency?: IdempotencyCall;
  /** The task whose running tool starts this one (ctx.callTool): filed with it (include/child-call.lua). */
  parent?: ParentCall;
  /** The failed task this one continues (`mcpt retry --resume`): its durable state is carried (include/resume.lua). */
  resume?: ResumeCall;
  /**
   * A plain call's entry by request id in its session's calls hash (what notifications/cancelled names it by),
   * written in the same step: `field` is the request id as JSON.
   */
  filed?: { keys: { calls: string }; field: string };
  fields: Record<string, string>;
}

/** What create-task-6.lua needs of a call's idempotency key (docs/durable-execution.md, "Idempotency keys"). */
export interface IdempotencyCall {
  keys: { entries: string; order: string };
  key: string;
  /** The digest of the call (its tool and arguments): another call under the key is refused. */
  digest: string;
  /** The most keys one principal keeps (IDEMPOTENCY_KEYS_PER_PRINCIPAL): the oldest give way. */
  maxKeys: number;
  /** The task filed under the key that the caller found gone before its expiry: filed over. */
  replace?: string;
}

/** What create-task-6.lua needs of the parent of a child task (docs/durable-execution.md, "Child tasks"). */
export interface ParentCall {
  keys: { record: string; durable: string; children: string };
  /** The call's field in the parent's durable hash (`c:<key>`). */
  field: string;
  /** The parent's attempt starting the child: refused once a later attempt of the parent has started. */
  attempt: number;
  /** The most steps and child tasks the parent may keep (DURABLE_MAX_STEPS). */
  maxEntries: number;
  /**
   * The most child tasks the parent may start when its record carries no cap of its own (MAX_CHILDREN_PER_TASK of
   * this process); a record's cap (the api's, inherited by its children) wins.
   */
  maxChildren: number;
  /** The digest of the call (protocol's callDigest): a call key filed for another call answers `sameCall: false`. */
  digest: string;
  /** The call's facts, a JSON object (DurableStore.callFacts): what operators see of the call. */
  facts: string;
}

/** What create-task-6.lua needs of a failed task that the new one continues (include/resume.lua). */
export interface ResumeCall {
  keys: { record: string; durable: string; copy: string };
  taskId: string;
  /** Its child tasks whose calls are not carried (they ended without a result, or are gone). */
  drop: string[];
}

/** How create-task-6.lua answered, beyond the request's opening. */
export type CreateTaskReply =
  | { opened: Exclude<Opened, 0> }
  | { opened: 0; verdict: 'created'; count: number; priority: number }
  | { opened: 0; verdict: 'owner-limit'; count: number }
  /** The idempotency key (`sameCall`: for the same call) or the parent's call key names `taskId` already. */
  | { opened: 0; verdict: 'existing'; taskId: string; sameCall: boolean }
  /** The parent cannot start a child (include/child-call.lua). */
  | { opened: 0; verdict: 'parent-refused'; reason: ParentRefusal; detail: string | undefined }
  /** The task to resume cannot be (include/resume.lua). */
  | { opened: 0; verdict: 'resume-refused'; reason: ResumeRefusal; detail: string | undefined };

export type ParentRefusal = 'missing' | 'ended' | 'stale' | 'full' | 'children';
export type ResumeRefusal = 'missing' | 'not-failed' | 'resumed';

/**
 * A task's BullMQ job as create-task-6.lua adds it, in the step that writes its record: what BullMQ's `queue.add`
 * would write for the same name, data and options. A `prioritized` job (one of our tool queues in a fair order) takes
 * the priority the script computes, which it adds itself; a `standard` one (an external consumer's queue, or a tool
 * queue without a fair order) goes onto the queue's wait list, as `queue.add` adds a job without a priority.
 */
export type ScriptedJob = ScriptedJobFields &
  (
    | {
        kind: 'prioritized';
        keys: ScriptedJobKeys & {
          /** The priority counter: the second part of a prioritized job's score. */
          priorityCounter: string;
        };
      }
    | {
        kind: 'standard';
        keys: ScriptedJobKeys & {
          /** The wait list (LPUSH: BullMQ's FIFO). */
          wait: string;
        };
      }
  );

/** The keys every BullMQ add writes or reads (a type, not an interface: named by ScriptKeys like any record). */
export type ScriptedJobKeys = {
  /** The job hash (BullMQ: `<prefix>:<queue>:<jobId>`). */
  job: string;
  marker: string;
  meta: string;
  active: string;
  events: string;
};

export interface ScriptedJobFields {
  name: string;
  /** JSON of the job data, as BullMQ stores it. */
  data: string;
  /** JSON of the stored (encoded) options; a prioritized job's without `priority`: the script adds it. */
  opts: string;
  /** The job's timestamp, epoch ms. */
  timestamp: number;
}

/** What the fair priority of a principal's new job for a tool needs (docs/scheduling.md, "Fairness"). */
export interface FairOrderCall {
  keys: {
    /** The tool's hash: principal -> priority of its last queued job, and the virtual time. */
    fairQueue: string;
    /** The tool queue's waiting prioritized jobs (BullMQ's). */
    prioritized: string;
  };
  principal: string;
  /** Priority steps per job (a whole number >= 1). */
  step: number;
  /** The largest priority BullMQ accepts. */
  maxPriority: number;
}

export interface TransitionCall {
  keys: {
    record: string;
    live: string;
    events: string;
    ownerLive: string;
    /** The task's outstanding input request ids. */
    inputs: string;
    /** The session's input requests waiting for its client. */
    sessionInputs: string;
    /** The task's webhook outbox and the set of tasks with deliveries due: touched only for a task with a webhook. */
    webhookOutbox: string;
    webhooksDue: string;
    /** The input request hashes to withdraw, in the order of `begin.withdraw` (only when `begin` is set). */
    withdrawn: readonly string[];
  };
  taskId: string;
  /** undefined: the status stays what it is (a note). */
  to: TaskStatus | undefined;
  from: readonly TaskStatus[];
  now: number;
  /** undefined (or empty) removes it. */
  statusMessage: string | undefined;
  /** JSON of the outcome to store; undefined leaves it as it is. */
  outcome: string | undefined;
  terminal: boolean;
  /** The prefix of the api replicas' channels (KeySpace.replicaChannel('')): waiters are told on theirs. */
  waiterChannels: string;
  sessionChannel: string;
  stream: { idleMs: number; maxLength: number };
  /** An input request asked (1) or answered or abandoned (-1). */
  input: { requestId: string; delta: 1 | -1 } | undefined;
  /** The worker attempt making the move; undefined: not fenced. */
  attempt: number | undefined;
  /** This move starts `attempt`: the requests outstanding are withdrawn (ids, and the notice to send for each). */
  begin: { withdraw: readonly { requestId: string; notice: string }[] } | undefined;
  /** What the caller read; the move is refused when the record changed since. */
  unchangedSince: { lastUpdatedAt: number; external: boolean } | undefined;
  /** The attempt the move is part of: its history entry carries it. */
  run?: { attempt: number; worker: string; startedAt?: number; ending?: string } | undefined;
  /** For a task with a webhook: the most deliveries its outbox holds, and the channel that wakes the delivery loops. */
  webhooks: { maxPending: number; channel: string };
}

export type TransitionReply =
  | { verdict: 'ok'; status: TaskStatus; lastUpdatedAt: number; durable?: boolean }
  | { verdict: 'unchanged'; status: TaskStatus; lastUpdatedAt: number }
  | { verdict: 'missing' }
  | { verdict: 'rejected'; current: TaskStatus }
  | { verdict: 'stale'; current: TaskStatus; attempt: number }
  | { verdict: 'changed'; current: TaskStatus }
  | { verdict: 'withdraw'; requestIds: string[] };

/** What settle-webhook-4.lua takes (see its header). */
export interface SettleWebhookCall {
  keys: { due: string; outbox: string; log: string; counters: string };
  taskId: string;
  leaseEnd: number;
  outcome: 'delivered' | 'retry' | 'abandoned' | 'empty' | 'expired';
  head?: string;
  next?: string;
  nextAt?: number;
  now: number;
  attempt?: string;
  logMax: number;
  expiresAt: number;
}

export interface SaveDurableCall {
  keys: { record: string; durable: string; live: string };
  taskId: string;
  attempt: number;
  /** `checkpoint`, or a step's field (`s:<name>`). */
  field: string;
  value: string;
  bytes: number;
  now: number;
  checkpoint: boolean;
  maxEntries: number;
  /** A step's facts, a JSON object (DurableStore.stepFacts); none for a checkpoint. */
  facts?: string;
  /** The most bytes the task's checkpoint and step results may take together (field names included). */
  maxTotalBytes: number;
}

export type SaveDurableReply =
  | { verdict: 'ok' | 'missing' }
  | { verdict: 'exists'; value: string }
  | { verdict: 'ended'; status: TaskStatus }
  | { verdict: 'stale'; attempt: number }
  | { verdict: 'full'; count: number }
  | { verdict: 'over'; bytes: number };

/** How answer-input-1.lua answered. */
export type AnswerInputVerdict = typeof Reply.ACCEPTED | typeof Reply.UNKNOWN | typeof Reply.ANSWERED;

/** How create-session-6.lua answered: created, or refused by a rate bucket (1 or 2) or a cap. */
export type CreateSessionReply =
  | { verdict: typeof Reply.CREATED }
  | { verdict: typeof Reply.RATE_LIMITED; bucket: number }
  | { verdict: typeof Reply.OWNER_CAP | typeof Reply.ADDRESS_CAP; count: number };

export interface TouchSessionCall extends OpeningCall {
  /** The caller holds the session's fields: only its existence is checked (and its timer restarted). */
  known?: boolean;
}

export interface CreateSessionCall {
  keys: {
    session: string;
    /** The live sessions of the session's owner and of its client address (sorted sets, for the caps). */
    ownerSessions: string;
    addressSessions: string;
    counters: string;
  };
  /** Exactly two `hit` buckets: the principal's and the address's initialize budgets. */
  buckets: readonly RateBucket[];
  sessionId: string;
  now: number;
  idleMs: number;
  /** When the new session stops counting under the caps unless used, epoch ms. */
  countedUntil: number;
  windowMs: number;
  /** The most live sessions of the owner and of the address; 0: no cap. */
  maxPerOwner: number;
  maxPerAddress: number;
  /** The security counters a refusal by a rate limit and by a cap increments. */
  refusalCounters: { rate: string; cap: string };
  fields: Record<string, string>;
}

/** The refusals every fenced durable write may answer (save-durable-3.lua and the wait scripts). */
export type DurableRefusalReply =
  | { verdict: 'missing' }
  | { verdict: 'ended'; status: TaskStatus }
  | { verdict: 'stale'; attempt: number }
  | { verdict: 'full'; count: number };

export interface ParkWaitCall {
  keys: { record: string; durable: string; signals: string; waiting: string };
  taskId: string;
  attempt: number;
  field: string;
  kind: string;
  until: number;
  pending: string;
  wait: string;
  prefix?: string;
  now: number;
  maxEntries: number;
  maxWaits: number;
}

export type ParkWaitReply =
  | { verdict: 'resolved'; value: string }
  | { verdict: 'parked'; until: number }
  | { verdict: 'too-many'; count: number }
  | DurableRefusalReply;

export interface SignalTaskCall {
  keys: { record: string; durable: string; signals: string; waiting: string };
  taskId: string;
  owner?: string;
  name: string;
  entry: string;
  maxKept: number;
}

export type SignalTaskReply =
  | { verdict: 'delivered'; tool: string }
  | { verdict: 'kept' | 'full'; count: number }
  | { verdict: 'ended'; status: TaskStatus }
  | { verdict: 'missing' };

export interface TakeInputCall {
  keys: { record: string; durable: string; request: string; sessionInputs: string };
  attempt: number;
  field: string;
  requestId: string;
  until: number;
  now: number;
}

export type TakeInputReply =
  | { verdict: 'resolved' | 'withdrawn'; value: string }
  | { verdict: 'pending' }
  | Exclude<DurableRefusalReply, { verdict: 'full' }>;

export interface NoteTriesCall {
  keys: { record: string; durable: string };
  attempt: number;
  field: string;
  tries: number;
  maxEntries: number;
}
