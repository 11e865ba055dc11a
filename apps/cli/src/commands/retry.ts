// `mcpt retry <taskId>`: a failed task runs again as a new task of the same owner; the failed one stays.
import type { Command } from 'commander';
import { operatorTask, ownerLabel } from '@mcp-tasks/engine';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerRetry(program: Command, io: CliIo): void {
  program
    .command('retry')
    .description('Run a failed task again as a new task with the same tool, arguments, owner and ttl')
    .argument('<taskId>', 'the failed task')
    .option('--json', 'print {"retriedFrom": id, "task": {...}} as JSON')
    .addHelpText('after', '\nThe owner finds the new task in tasks/list; its statusMessage names the task it retries.')
    .action(async (taskId: string, options: { json?: boolean }) => {
      const created = await withOperator(io.env, (operator) =>
        operator.admin.retry(taskId, { service: operator.service, tool: operator.tool }),
      );
      emit(
        io,
        options.json === true,
        { retriedFrom: taskId, task: operatorTask(created) },
        () =>
          `Retried task ${taskId} as new task ${created.taskId} (tool ${created.tool}, owner ${ownerLabel(created.owner)}).`,
      );
    });
}
