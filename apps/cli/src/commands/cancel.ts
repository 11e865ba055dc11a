// `mcpt cancel <taskId>`: the same atomic transition and work stop as tasks/cancel, for any owner's task.
import type { Command } from 'commander';
import { operatorTask } from '@mcp-tasks/engine';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerCancel(program: Command, io: CliIo): void {
  program
    .command('cancel')
    .description('Cancel a working or input_required task (its tool is stopped; the owner sees status cancelled)')
    .argument('<taskId>', 'the task id')
    .option('-m, --message <text>', 'the statusMessage the owner will see', 'The task was cancelled by an operator.')
    .option('--json', 'print the cancelled task as JSON')
    .action(async (taskId: string, options: { message: string; json?: boolean }) => {
      const cancelled = await withOperator(io.env, (operator) =>
        operator.admin.cancel(operator.service(), taskId, options.message),
      );
      emit(
        io,
        options.json === true,
        operatorTask(cancelled),
        () => `Cancelled task ${taskId} (tool ${cancelled.tool}).`,
      );
    });
}
