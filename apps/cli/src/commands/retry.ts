// `mcpt retry <taskId>`: a failed task runs again as a new task of the same owner; the failed one stays. Asks first
// (or takes --yes).
import type { Command } from 'commander';
import { operatorTask, ownerLabel } from '@mcp-tasks/engine';
import { TaskKind, TaskStatus } from '@mcp-tasks/protocol';
import { confirm, refuseUnanswerable, withYesOption, type YesOption } from '../confirm.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerRetry(program: Command, io: CliIo): void {
  const command = program
    .command('retry')
    .description('Run a failed task again as a new task with the same tool, arguments, owner and ttl')
    .argument('<taskId>', 'the failed task')
    .option('--json', 'print {"retriedFrom": id, "task": {...}} as JSON')
    .addHelpText('after', '\nThe owner finds the new task in tasks/list; its statusMessage names the task it retries.');
  withYesOption(command, 'retry').action(async (taskId: string, options: { json?: boolean } & YesOption) => {
    refuseUnanswerable(io, options, 'retry');
    const created = await withOperator(io, async (operator) => {
      const record = await operator.store.get(taskId);
      // A task that cannot be retried gets the refusal of admin.retry, without a question first.
      if (record?.status === TaskStatus.Failed && record.kind === TaskKind.Task) {
        await confirm(
          io,
          options,
          `Run failed task ${taskId} (tool ${record.tool}, owner ${ownerLabel(record.owner)}) again as a new task?`,
        );
      }
      return operator.admin.retry(taskId, { service: operator.service, tool: operator.tool });
    });
    emit(
      io,
      options.json === true,
      { retriedFrom: taskId, task: operatorTask(created) },
      () =>
        `Retried task ${taskId} as new task ${created.taskId} (tool ${created.tool}, owner ${ownerLabel(created.owner)}).`,
    );
  });
}
