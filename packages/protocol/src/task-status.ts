// The task state machine of the 2025-11-25 specification (T-LIFE-1..3).

export const TaskStatus = {
  Working: 'working',
  InputRequired: 'input_required',
  Completed: 'completed',
  Failed: 'failed',
  Cancelled: 'cancelled',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export const TASK_STATUSES: readonly TaskStatus[] = Object.values(TaskStatus);
export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

const allowedMoves: Record<TaskStatus, readonly TaskStatus[]> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: TaskStatus): boolean {
  return allowedMoves[status].length === 0;
}

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return allowedMoves[from].includes(to);
}

/** Statuses a task may move to `to` from: the input of the atomic transition script in Redis. */
export function sourcesOf(to: TaskStatus): TaskStatus[] {
  return TASK_STATUSES.filter((from) => canTransition(from, to));
}
