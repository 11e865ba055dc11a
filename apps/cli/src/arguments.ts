// Parsers for option values: each turns text into a checked value or an error commander reports as a usage error.
import { InvalidArgumentError } from 'commander';
import { isTaskStatus, TaskKind, TASK_STATUSES, type TaskStatus } from '@mcp-tasks/protocol';
import { parseDuration } from './duration.ts';

export function statusesArgument(value: string): TaskStatus[] {
  const list = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const wrong = list.filter((status) => !isTaskStatus(status));
  if (list.length === 0 || wrong.length > 0) {
    throw new InvalidArgumentError(`unknown status '${wrong.join(',') || value}'; use ${TASK_STATUSES.join(', ')}`);
  }
  return list as TaskStatus[];
}

export function kindArgument(value: string): TaskKind {
  if (value === TaskKind.Task || value === TaskKind.PlainToolCall) return value;
  throw new InvalidArgumentError("use 'task' or 'call'");
}

export function durationArgument(value: string): number {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function limitArgument(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('use a whole number from 1 to 1000');
  return n;
}
