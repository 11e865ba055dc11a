// `mcpt purge --older-than <duration>`: deletes terminal tasks before their ttl would, once the operator confirmed
// (or gave --yes); --dry-run only lists them.
import type { Command } from 'commander';
import { durationArgument } from '../arguments.ts';
import { confirm, refuseUnanswerable, withYesOption, type YesOption } from '../confirm.ts';
import { formatDuration } from '../duration.ts';
import { iso } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerPurge(program: Command, io: CliIo): void {
  const command = program
    .command('purge')
    .description('Delete completed, failed and cancelled tasks whose last change is older than a duration')
    .requiredOption('--older-than <duration>', 'finished longer ago than this (e.g. 1h, 7d)', durationArgument)
    .option('--dry-run', 'only list what would be deleted')
    .option('--json', 'print {"purged": n, "taskIds": [...], "dryRun": bool, "finishedBefore": iso} as JSON')
    .addHelpText(
      'after',
      '\nWorking and input_required tasks are never purged; cancel them first. Owners get "Task not found".',
    );
  withYesOption(command, 'purge').action(
    async (options: { olderThan: number; dryRun?: boolean; json?: boolean } & YesOption) => {
      const dryRun = options.dryRun === true;
      if (!dryRun) refuseUnanswerable(io, options, 'purge');
      const cutoff = Date.now() - options.olderThan;
      const result = await withOperator(io, async ({ admin }) => {
        if (dryRun || options.yes === true) return admin.purge(cutoff, { dryRun });
        // What would go, counted first: the set cannot grow meanwhile (a task finishing now is not older than cutoff).
        const found = await admin.purge(cutoff, { dryRun: true });
        if (found.taskIds.length === 0) return { taskIds: [], dryRun: false };
        await confirm(
          io,
          options,
          `Delete ${found.taskIds.length} terminal task(s) finished more than ${formatDuration(options.olderThan)} ago (before ${iso(cutoff)})?`,
        );
        return admin.purge(cutoff);
      });
      const data = {
        purged: result.taskIds.length,
        taskIds: result.taskIds,
        dryRun: result.dryRun,
        finishedBefore: iso(cutoff),
      };
      emit(io, options.json === true, data, () => {
        const verb = result.dryRun ? 'Would purge' : 'Purged';
        const head = `${verb} ${result.taskIds.length} terminal task(s) finished more than ${formatDuration(options.olderThan)} ago.`;
        return result.dryRun && result.taskIds.length > 0
          ? [head, ...result.taskIds.map((id) => `  ${id}`)].join('\n')
          : head;
      });
    },
  );
}
