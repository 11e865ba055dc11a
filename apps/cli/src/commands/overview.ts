// `mcpt overview`: tasks per MCP status, jobs per BullMQ state, connected workers, the oldest waiting task.
import type { Command } from 'commander';
import { formatDuration } from '../duration.ts';
import { table } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerOverview(program: Command, io: CliIo): void {
  program
    .command('overview')
    .description('Counts of tasks per MCP status and of jobs per BullMQ state, workers connected, oldest waiting task')
    .option('--json', 'print JSON for scripts instead of tables')
    .addHelpText('after', '\nCounting reads the status of every task: it takes about a second per 100k tasks.')
    .action(async (options: { json?: boolean }) => {
      const overview = await withOperator(io.env, ({ admin }) => admin.overview());
      emit(io, options.json === true, overview, () => {
        const { tasks, jobs, workers, oldestWaiting } = overview;
        const parts = [
          `Tasks: ${tasks.total} (tasks ${tasks.byKind.task}, plain calls ${tasks.byKind.call})`,
          table(
            [{ title: 'status' }, { title: 'count', align: 'right' }],
            Object.entries(tasks.byStatus).map(([status, count]) => [status, String(count)]),
          ),
          '',
          table(
            [{ title: 'job state' }, { title: 'count', align: 'right' }],
            Object.entries(jobs).map(([state, count]) => [state, String(count)]),
          ),
          '',
          `Workers connected: ${workers.length}`,
          ...workers.map(
            (worker) => `  ${worker.name || '(unnamed)'}  ${worker.addr}  up ${formatDuration(worker.age * 1000)}`,
          ),
          oldestWaiting
            ? `Oldest waiting task: ${oldestWaiting.taskId} (tool ${oldestWaiting.tool}, owner ${oldestWaiting.owner}), waiting ${formatDuration(oldestWaiting.waitingMs)}`
            : 'Oldest waiting task: none waiting',
        ];
        return parts.join('\n');
      });
    });
}
