// A task whose tool no live worker serves (its workers stopped or died, the tool left the catalog): its jobs wait in
// the tool's queue until a worker serving it comes, up to the task's ttl. Its record still says what it said last
// ("The task is queued for a worker."); readers (tasks/get, mcpt inspect, the dashboard) say so instead, from the
// live catalog, so that neither a client nor an operator waits on a task nothing will run (docs/catalog.md).
import { TaskStatus, type TaskRecord } from '@mcp-tasks/protocol';

export function unservedMessage(record: Pick<TaskRecord, 'tool' | 'createdAt' | 'ttl'>): string {
  const expires = new Date(record.createdAt + record.ttl).toISOString();
  return `No live worker serves tool '${record.tool}'; the task waits for one (up to its ttl: until ${expires}).`;
}

/**
 * The record as a reader should see it: a `working` task whose tool has no live catalog entry (`served` says which
 * do) gets the statusMessage of unservedMessage; any other record is returned as it is.
 */
export function withServedStatus(record: TaskRecord, served: (tool: string) => boolean): TaskRecord {
  if (record.status !== TaskStatus.Working || served(record.tool)) return record;
  return { ...record, statusMessage: unservedMessage(record) };
}
