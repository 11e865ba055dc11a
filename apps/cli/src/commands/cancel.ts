// `mcpt cancel <taskId>`: the same atomic transition and work stop as tasks/cancel, for any owner's task, once the
// operator confirmed (or gave --yes).
import type { Command } from 'commander';
import { operatorTask } from '@mcp-tasks/engine';
import { isTerminal } from '@mcp-tasks/protocol';
import { confirm, refuseUnanswerable, withYesOption, type YesOption } from '../confirm.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerCancel(program: Command, io: CliIo): void {
  const command = program
    .command('cancel')
    .description('Cancel a working or input_required task (its tool is stopped; the owner sees status cancelled)')
    .argument('<taskId>', 'the task id')
    .option('-m, --message <text>', 'the statusMessage the owner will see', 'The task was cancelled by an operator.')
    .option('--json', 'print the cancelled task as JSON');
  withYesOption(command, 'cancel').action(
    async (taskId: string, options: { message: string; json?: boolean } & YesOption) => {
      refuseUnanswerable(io, options, 'cancel');
      const cancelled = await withOperator(io, async (operator) => {
        const record = await operator.store.get(taskId);
        // A task that is gone or ended gets the refusal of admin.cancel, without a question first.
        if (record && !isTerminal(record.status)) {
          await confirm(
            io,
            options,
            `Cancel task ${taskId} (tool ${record.tool}, owner ${record.owner}, ${record.status})?`,
          );
        }
        return operator.admin.cancel(operator.service(), taskId, options.message);
      });
      emit(
        io,
        options.json === true,
        operatorTask(cancelled),
        () => `Cancelled task ${taskId} (tool ${cancelled.tool}).`,
      );
    },
  );
}
