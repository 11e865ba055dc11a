// `mcpt purge --older-than <duration>`: deletes terminal tasks before their ttl would.
import type { Command } from 'commander';
import { durationArgument } from '../arguments.ts';
import { formatDuration } from '../duration.ts';
import { iso } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerPurge(program: Command, io: CliIo): void {
  program
    .command('purge')
    .description('Delete completed, failed and cancelled tasks whose last change is older than a duration')
    .requiredOption('--older-than <duration>', 'finished longer ago than this (e.g. 1h, 7d)', durationArgument)
    .option('--dry-run', 'only list what would be deleted')
    .option('--json', 'print {"purged": n, "taskIds": [...], "dryRun": bool, "finishedBefore": iso} as JSON')
    .addHelpText(
      'after',
      '\nWorking and input_required tasks are never purged; cancel them first. Owners get "Task not found".',
    )
    .action(async (options: { olderThan: number; dryRun?: boolean; json?: boolean }) => {
      const cutoff = Date.now() - options.olderThan;
      const result = await withOperator(io.env, ({ admin }) =>
        admin.purge(cutoff, { dryRun: options.dryRun === true }),
      );
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
    });
}
