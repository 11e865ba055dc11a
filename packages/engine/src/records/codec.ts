// How a task record is laid out in its Redis hash, and the other strings the records module stores: the janitor's
// expiry entries and the operators' status history. The only code that reads or writes raw hash fields.
import {
  isTaskStatus,
  isTerminal,
  TaskKind,
  type DurableFacts,
  type ExternalRef,
  type Outcome,
  type TaskRecord,
  type TaskStatus,
  type WebhookTarget,
  type TaskWait,
} from '@mcp-tasks/protocol';

export function encodeRecord(record: TaskRecord): Record<string, string> {
  const fields: Record<string, string> = {
    taskId: record.taskId,
    kind: record.kind,
    status: record.status,
    createdAt: String(record.createdAt),
    lastUpdatedAt: String(record.lastUpdatedAt),
    ttl: String(record.ttl),
    pollInterval: String(record.pollInterval),
    owner: record.owner,
    sessionId: record.sessionId,
    tool: record.tool,
  };
  if (record.statusMessage) fields['statusMessage'] = record.statusMessage;
  if (record.outcome) fields['outcome'] = JSON.stringify(record.outcome);
  if (record.progressToken !== undefined) fields['progressToken'] = JSON.stringify(record.progressToken);
  if (record.external) fields['external'] = JSON.stringify(record.external);
  if (record.trace) fields['trace'] = JSON.stringify(record.trace);
  if (record.parent !== undefined) fields['parent'] = record.parent;
  if (record.resumedFrom !== undefined) fields['resumedFrom'] = record.resumedFrom;
  // A resumed task starts with durable state: the first attempt reads it (the record says so, as the scripts that
  // store such state write it).
  if (record.durable) Object.assign(fields, encodeDurable(record.durable));
  // JSON {url, events}: transition-8.lua reads `events` to queue a delivery (docs/webhooks.md).
  if (record.webhook) fields['webhook'] = JSON.stringify(record.webhook);
  return fields;
}

/** A record from its hash (HGETALL), or undefined when it is missing or past its ttl. */
export function decodeRecord(
  hash: Record<string, string> | null | undefined,
  now = Date.now(),
): TaskRecord | undefined {
  if (!hash || hash['taskId'] === undefined || !isTaskStatus(hash['status'])) return undefined;
  const record: TaskRecord = {
    taskId: hash['taskId'],
    kind: kindOf(hash['kind']),
    status: hash['status'],
    createdAt: Number(hash['createdAt']),
    lastUpdatedAt: Number(hash['lastUpdatedAt']),
    ttl: Number(hash['ttl']),
    pollInterval: Number(hash['pollInterval']),
    owner: hash['owner'] ?? '',
    sessionId: hash['sessionId'] ?? '',
    tool: hash['tool'] ?? '',
  };
  if (hash['statusMessage']) record.statusMessage = hash['statusMessage'];
  if (hash['outcome']) record.outcome = JSON.parse(hash['outcome']) as Outcome;
  if (hash['progressToken']) record.progressToken = JSON.parse(hash['progressToken']) as string | number;
  if (hash['external']) record.external = decodeExternal(hash['external']);
  if (hash['trace']) record.trace = JSON.parse(hash['trace']) as NonNullable<TaskRecord['trace']>;
  if (hash['parent']) record.parent = hash['parent'];
  if (hash['durable']) record.durable = decodeDurable(hash);
  if (hash['resumedFrom']) record.resumedFrom = hash['resumedFrom'];
  if (hash['resumedBy']) record.resumedBy = hash['resumedBy'];
  if (hash['webhook']) record.webhook = JSON.parse(hash['webhook']) as WebhookTarget;
  if (hash['handBacks']) record.handBacks = Number(hash['handBacks']);
  if (hash['wait']) record.wait = JSON.parse(hash['wait']) as TaskWait;
  // A record past its ttl is treated as gone even if Redis has not evicted it yet (T-TTL-1).
  if (isExpired(record, now)) return undefined;
  return record;
}

/** The durable facts the scripts that keep a tool's state write on its record (save-durable-3.lua, create-task-6.lua). */
function decodeDurable(hash: Record<string, string>): DurableFacts {
  const facts: DurableFacts = { children: Number(hash['children'] ?? 0) };
  if (hash['checkpointAt'] !== undefined) {
    facts.checkpoint = { at: Number(hash['checkpointAt']), bytes: Number(hash['checkpointBytes'] ?? 0) };
  }
  return facts;
}

function encodeDurable(facts: DurableFacts): Record<string, string> {
  const fields: Record<string, string> = { durable: '1', children: String(facts.children) };
  if (facts.checkpoint) {
    fields['checkpointAt'] = String(facts.checkpoint.at);
    fields['checkpointBytes'] = String(facts.checkpoint.bytes);
  }
  return fields;
}

export function decodeExternal(raw: string | null | undefined): ExternalRef | undefined {
  return raw ? (JSON.parse(raw) as ExternalRef) : undefined;
}

export function kindOf(raw: string | null | undefined): TaskKind {
  return raw === TaskKind.PlainToolCall ? TaskKind.PlainToolCall : TaskKind.Task;
}

export function isExpired(record: Pick<TaskRecord, 'createdAt' | 'ttl'>, now: number): boolean {
  return record.createdAt + record.ttl <= now;
}

/** What operators filter and count on, read without arguments and outcomes. */
export interface TaskSummary {
  status: TaskStatus;
  kind: TaskKind;
  createdAt: number;
  ttl: number;
  /** Unset unless asked for (TaskStore.summaries). */
  tool?: string;
  owner?: string;
  lastUpdatedAt?: number;
}

/** The fields every summary reads; `status` first, so that a missing record shows as a null there. */
export const SUMMARY_FIELDS = ['status', 'kind', 'createdAt', 'ttl'] as const;
export const SUMMARY_EXTRAS = ['tool', 'owner', 'lastUpdatedAt'] as const;
export type SummaryExtra = (typeof SUMMARY_EXTRAS)[number];

/** A summary from the HMGET of SUMMARY_FIELDS then `extras`; undefined when the record is gone or unreadable. */
export function decodeSummary(
  values: readonly (string | null)[] | undefined,
  extras: readonly SummaryExtra[],
): TaskSummary | undefined {
  const [status, kind, createdAt, ttl] = values ?? [];
  if (!isTaskStatus(status)) return undefined;
  const summary: TaskSummary = { status, kind: kindOf(kind), createdAt: Number(createdAt), ttl: Number(ttl) };
  extras.forEach((name, i) => {
    const value = values?.[SUMMARY_FIELDS.length + i];
    if (value === null || value === undefined) return;
    if (name === 'lastUpdatedAt') summary.lastUpdatedAt = Number(value);
    else summary[name] = value;
  });
  return summary;
}

/** One status change in a record's history (the creation included), for operators. */
export interface HistoryEntry {
  at: number;
  status: TaskStatus;
  statusMessage?: string;
}

/** The history a new record starts with; the transition script appends to it (the last 19 changes are kept). */
export function initialHistory(record: Pick<TaskRecord, 'createdAt' | 'status' | 'statusMessage'>): string {
  return JSON.stringify([[record.createdAt, record.status, record.statusMessage ?? '']]);
}

export function decodeHistory(raw: string | undefined): HistoryEntry[] {
  if (!raw) return [];
  try {
    const entries = JSON.parse(raw) as unknown;
    if (!Array.isArray(entries)) return [];
    return entries.flatMap((entry) => {
      if (!Array.isArray(entry) || !isTaskStatus(entry[1])) return [];
      const [at, status, statusMessage] = entry as [number, TaskStatus, unknown];
      return [
        typeof statusMessage === 'string' && statusMessage !== ''
          ? { at: Number(at), status, statusMessage }
          : { at: Number(at), status },
      ];
    });
  } catch {
    return [];
  }
}

/** One attempt of the task's job, for operators: from the history entries its moves made (transition-8.lua `run`). */
export interface AttemptEntry {
  /** The job's start count (BullMQ's attemptsStarted): the number logs (`jobAttempt`) and traces carry. */
  attempt: number;
  worker: string;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms; absent while it runs. */
  endedAt?: number;
  /**
   * How it ended: completed, failed, parked (on a durable wait), lost (its worker stopped without ending it: a later attempt started, or another
   * worker found it gone), handed-back, or the terminal status that ended it (cancelled); absent while it runs.
   */
  ending?: string;
}

/**
 * The attempts of the task's job, oldest first, from its status history: each move a worker makes as part of an
 * attempt carries it ({a, w, s, e}: attempt, worker, start, ending). A later attempt's start ends the earlier ones
 * still open as lost; a terminal move ends those still open with its status. An attempt whose entries the history
 * dropped (it keeps the first and the last 19) is listed from those left.
 */
export function attemptsOf(raw: string | undefined): AttemptEntry[] {
  const attempts = new Map<number, AttemptEntry>();
  const end = (entry: AttemptEntry, at: number, ending: string) => {
    entry.endedAt = at;
    entry.ending = ending;
  };
  for (const { at, status, run } of historyEntries(raw)) {
    if (run) {
      for (const open of attempts.values()) if (open.attempt < run.a && !open.ending) end(open, at, 'lost');
      let attempt = attempts.get(run.a);
      if (!attempt) {
        attempt = { attempt: run.a, worker: run.w, startedAt: run.s };
        attempts.set(run.a, attempt);
      }
      if (run.e !== undefined && !attempt.ending) end(attempt, at, run.e);
    }
    if (isTerminal(status)) for (const open of attempts.values()) if (!open.ending) end(open, at, status);
  }
  return [...attempts.values()].sort((a, b) => a.attempt - b.attempt);
}

/** The fourth element of a history entry: the attempt whose move it records. */
interface RunTag {
  a: number;
  w: string;
  s: number;
  e?: string;
}

function historyEntries(raw: string | undefined): { at: number; status: TaskStatus; run?: RunTag }[] {
  if (!raw) return [];
  try {
    const entries = JSON.parse(raw) as unknown;
    if (!Array.isArray(entries)) return [];
    return entries.flatMap((entry) => {
      if (!Array.isArray(entry) || !isTaskStatus(entry[1])) return [];
      const tag = entry[3] as Partial<RunTag> | undefined;
      const run =
        tag && typeof tag.a === 'number' && typeof tag.w === 'string'
          ? { a: tag.a, w: tag.w, s: Number(tag.s ?? entry[0]), ...(typeof tag.e === 'string' ? { e: tag.e } : {}) }
          : undefined;
      return [{ at: Number(entry[0]), status: entry[1], ...(run ? { run } : {}) }];
    });
  } catch {
    return [];
  }
}

/** What the janitor needs to delete a task once its record is gone (the task's entry in the expiries set). */
export interface ExpiryEntry {
  taskId: string;
  owner: string;
  /** Its member of the owner index and the all-tasks index. */
  member: string;
  /** The session whose event stream holds the task's notifications; unset in entries of older versions. */
  sessionId?: string;
  /** The BullMQ queue of its job (the tool's own, or its external consumer's); unset in entries of older versions. */
  queue?: string;
}

export function encodeExpiryEntry(
  record: Pick<TaskRecord, 'taskId' | 'owner' | 'kind'> & { sessionId?: string; queue?: string },
  member: string,
): string {
  const { taskId, owner, kind, sessionId, queue } = record;
  // Older versions wrote the first four or five fields: their entries still decode, and are still removed
  // (TaskStore.delete names each form).
  if (queue !== undefined) return JSON.stringify([taskId, owner, member, kind, sessionId ?? '', queue]);
  return JSON.stringify(
    sessionId === undefined ? [taskId, owner, member, kind] : [taskId, owner, member, kind, sessionId],
  );
}

export function decodeExpiryEntry(entry: string): ExpiryEntry {
  const [taskId, owner, member, , sessionId, queue] = JSON.parse(entry) as [
    string,
    string,
    string,
    string,
    string?,
    string?,
  ];
  return { taskId, owner, member, ...(sessionId ? { sessionId } : {}), ...(queue ? { queue } : {}) };
}
