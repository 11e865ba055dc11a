// `mcpt signal <taskId> <name> [--data JSON]`: sends an event to a task, as the api's POST /tasks/{taskId}/events/{name}
// does for its principal, for any owner's task (docs/durable-execution.md, "Waits"). A task waiting for that event
// resumes with the data; otherwise the event is kept for its next wait of that name.
import type { Command } from 'commander';
import { InvalidInputError, InvalidStateError, LimitExceededError, TaskNotFoundError } from '@mcp-tasks/protocol';
import { emit, type CliIo } from '../io.ts';
import { CliError, withOperator } from '../operator.ts';

export function registerSignal(program: Command, io: CliIo): void {
  program
    .command('signal')
    .description(
      "Send an event to a task: a task waiting for it (ctx.waitForEvent) resumes with its data, else it is kept for the task's next wait of that name",
    )
    .argument('<taskId>', 'the task id')
    .argument('<name>', "the event's name (letters, digits, '.', '_', ':', '-')")
    .option('-d, --data <json>', "the event's data, JSON (e.g. '{\"approved\":true}'); absent: none")
    .option('--json', 'print the outcome as JSON')
    .action(async (taskId: string, name: string, options: { data?: string; json?: boolean }) => {
      const data = options.data === undefined ? undefined : canonicalJson(options.data);
      const sent = await withOperator(io, async ({ signals }) => {
        try {
          return await signals.send({ taskId, name, ...(data !== undefined ? { data } : {}) });
        } catch (error) {
          throw refusal(error, taskId);
        }
      });
      emit(io, options.json === true, { taskId, name, ...sent }, () =>
        sent.delivered
          ? `Delivered event '${name}' to task ${taskId}: it was waiting for it and resumes now.`
          : `Kept event '${name}' for task ${taskId} (${sent.kept} kept): its next wait for '${name}' takes it.`,
      );
    });
}

/** The --data text as JSON writes it, or a usage error that says what is wrong. */
function canonicalJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch (error) {
    throw new CliError(`--data is not JSON: ${(error as Error).message} (quote a string: --data '"text"')`, 2);
  }
}

function refusal(error: unknown, taskId: string): unknown {
  if (error instanceof TaskNotFoundError) {
    return new CliError(`Task ${taskId} not found (it never existed, expired or was purged)`);
  }
  if (error instanceof InvalidStateError || error instanceof LimitExceededError) return new CliError(error.message);
  if (error instanceof InvalidInputError) return new CliError(error.message, 2);
  return error;
}
