/**
 * Task operations: create, find, wait for and cancel a task (TaskService), an audited task from a catalog entry (the
 * api's calls and the worker's child calls), external tasks, stopping a task's work, and what a task says of an
 * attempt lost or handed back.
 */
export { ExternalTasks, forwardCancel } from './external.ts';
export { handedBackMessage, lostAttemptMessage, traceLostAttempts } from './lost-attempts.ts';
export { parseControlMessage } from './stop-task-work.ts';
export {
  createTaskFromEntry,
  createWatchedTaskFromEntry,
  type EntryTaskInput,
  type TaskRequester,
} from './task-from-entry.ts';
export { type CreatedTask, type CreateTaskInput, TaskService, type WaitOptions } from './task-service.ts';
