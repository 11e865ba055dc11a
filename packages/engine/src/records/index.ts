/**
 * Task records: the one owner of a task's keys and hash fields (TaskStore), their indexes and codecs, what a
 * running tool keeps beside them (durable.ts), what a parked task waits for (waits.ts), webhook outboxes, and the
 * cursor of listing pages. Codecs and indexes stay internal.
 */
export { type AttemptEntry } from './codec.ts';
export { type DurableEntry, type DurableSnapshot, EMPTY_SNAPSHOT, type FiledCall } from './durable.ts';
export { TaskKeys } from './keys.ts';
export { decodeCursor, encodeCursor, indexMember } from './list-cursor.ts';
export {
  AttemptEnding,
  type AttemptRun,
  type AttemptStart,
  DEFAULT_SESSION_STREAM,
  type TaskPage,
  TaskStore,
} from './store.ts';
export {
  type ParkedTask,
  type PendingWait,
  readStoredWait,
  stepTriesKey,
  type StoredWait,
  type WaitOutcome,
} from './waits.ts';
export { type DeliveryAttempt, type WebhookView } from './webhooks.ts';
