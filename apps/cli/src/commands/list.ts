// `mcpt list`: tasks of every owner, newest first, filtered and paginated.
import type { Command } from 'commander';
import { durationArgument, kindArgument, limitArgument, statusesArgument } from '../arguments.ts';
import { operatorTask, type TaskFilter } from '@mcp-tasks/engine';
import { ownerLabel } from '@mcp-tasks/runtime';
import { TaskKind, TASK_STATUSES, type TaskStatus } from '@mcp-tasks/protocol';
import { formatDuration } from '../duration.ts';
import { table } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

interface ListOptions {
  status?: TaskStatus[];
  tool?: string;
  owner?: string;
  kind?: TaskKind;
  olderThan?: number;
  newerThan?: number;
  limit: number;
  cursor?: string;
  json?: boolean;
}

export function registerList(program: Command, io: CliIo): void {
  program
    .command('list')
    .description('List tasks of every owner, newest first')
    .option(
      '-s, --status <statuses>',
      `only these statuses, comma separated (${TASK_STATUSES.join(', ')})`,
      statusesArgument,
    )
    .option('-t, --tool <name>', 'only tasks of this tool')
    .option(
      '-o, --owner <owner>',
      "only this owner's tasks, as this command shows it (principal:<name>, anonymous:<address>, session:sha256:<digest>)",
    )
    .option('-k, --kind <kind>', "'task' (task-augmented calls) or 'call' (plain calls run on a worker)", kindArgument)
    .option('--older-than <duration>', 'only tasks created longer ago than this (e.g. 15m, 2h, 7d)', durationArgument)
    .option('--newer-than <duration>', 'only tasks created within this (e.g. 30s, 1h)', durationArgument)
    .option('-n, --limit <count>', 'tasks per page (1-1000)', limitArgument, 50)
    .option('--cursor <cursor>', 'continue after a previous page (pass the same filters again)')
    .option('--json', 'print JSON for scripts: {"tasks": [...], "nextCursor": "..."}')
    .action(async (options: ListOptions) => {
      const now = Date.now();
      const filter: TaskFilter = {
        ...(options.status ? { statuses: options.status } : {}),
        ...(options.tool !== undefined ? { tool: options.tool } : {}),
        ...(options.owner !== undefined ? { owner: options.owner } : {}),
        ...(options.kind !== undefined ? { kind: options.kind } : {}),
        ...(options.olderThan !== undefined ? { createdBefore: now - options.olderThan } : {}),
        ...(options.newerThan !== undefined ? { createdAfter: now - options.newerThan } : {}),
      };
      const page = await withOperator(io, ({ admin }) =>
        admin.list(filter, {
          limit: options.limit,
          ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
        }),
      );
      const tasks = page.tasks.map(operatorTask);
      const data = { tasks, ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) };
      emit(io, options.json === true, data, () => {
        const rows = page.tasks.map((task) => [
          task.taskId,
          task.status,
          task.kind === TaskKind.PlainToolCall ? `${task.tool} (call)` : task.tool,
          ownerLabel(task.owner),
          `${formatDuration(now - task.createdAt)} ago`,
          `${formatDuration(now - task.lastUpdatedAt)} ago`,
          task.statusMessage ?? '',
        ]);
        const lines = [
          rows.length > 0
            ? table(
                [
                  { title: 'task' },
                  { title: 'status' },
                  { title: 'tool', max: 24 },
                  { title: 'owner', max: 48 },
                  { title: 'created' },
                  { title: 'updated' },
                  { title: 'status message', max: 60 },
                ],
                rows,
              )
            : 'No tasks match.',
        ];
        if (page.nextCursor !== undefined) lines.push(`\nMore: add --cursor ${page.nextCursor}`);
        return lines.join('\n');
      });
    });
}
