// What operators see of parked tasks (docs/durable-execution.md, "Operators"): one task's waits (mcpt inspect, the
// dashboard's task page), and every parked task with what it waits for and until when, counted by kind (mcpt
// overview, the dashboard, the mcpt_tasks_parked metric). Read from the waiting sets and the records' `wait` field.
import type { TaskRecord, WaitKind } from '@mcp-tasks/protocol';
import { ownerLabel } from '@mcp-tasks/runtime';
import type { TaskStore } from '../records/store.ts';

/** One task's waits as operators see them. */
export interface WaitsView {
  /** What the task waits for now, while its job is parked. */
  waiting?: { kind: WaitKind; until: string; key: string; name?: string };
  /** The sleeps and waits its tool made (DURABLE_MAX_WAITS bounds them). */
  waits: number;
  /** Events sent to it that no wait has taken yet (EVENTS_MAX_KEPT bounds them). */
  eventsKept: number;
}

/** A parked task as the overview lists it. */
export interface ParkedEntry {
  taskId: string;
  tool: string;
  owner: string;
  kind: WaitKind;
  /** ISO time: the end of the sleep, or the wait's timeout. */
  until: string;
  /** The event's name, the input request's method. */
  name?: string;
}

export interface ParkedOverview {
  byKind: Record<WaitKind, number>;
  /** The parked tasks due first, at most `limit` of each kind. */
  soonest: ParkedEntry[];
}

/** One task's waits; undefined for a task that never waited and has no event kept. */
export async function waitsView(store: TaskStore, record: TaskRecord): Promise<WaitsView | undefined> {
  const { waits, eventsKept } = await store.waits.facts(record.taskId);
  const { wait } = record;
  if (!wait && waits === 0 && eventsKept === 0) return undefined;
  return {
    ...(wait
      ? {
          waiting: {
            kind: wait.kind,
            until: new Date(wait.until).toISOString(),
            key: wait.key,
            ...(wait.name !== undefined ? { name: wait.name } : {}),
          },
        }
      : {}),
    waits,
    eventsKept,
  };
}

/**
 * The parked tasks by kind, and those due first with what they wait for. An entry whose record no longer says it waits
 * (the task ended or expired while parked) is left out, and forgotten.
 */
export async function parkedOverview(store: TaskStore, limit = 20): Promise<ParkedOverview> {
  const [byKind, parked] = await Promise.all([store.waits.counts(), store.waits.parked(limit)]);
  const records = await store.records(parked.map((entry) => entry.taskId));
  const byId = new Map(records.map((record) => [record.taskId, record]));
  const stale = parked.filter((entry) => byId.get(entry.taskId)?.wait?.kind !== entry.kind);
  await store.waits.forget(stale);
  const soonest = parked.flatMap((entry): ParkedEntry[] => {
    const record = byId.get(entry.taskId);
    const wait = record?.wait;
    if (!record || !wait || wait.kind !== entry.kind) return [];
    return [
      {
        taskId: record.taskId,
        tool: record.tool,
        owner: ownerLabel(record.owner),
        kind: wait.kind,
        until: new Date(wait.until).toISOString(),
        ...(wait.name !== undefined ? { name: wait.name } : {}),
      },
    ];
  });
  for (const entry of stale) byKind[entry.kind] = Math.max(0, byKind[entry.kind] - 1);
  return { byKind, soonest };
}
