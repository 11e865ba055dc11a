// `mcpt retry <taskId>`: a failed task runs again as a new task of the same owner; the failed one stays. It starts
// over (its completed steps run again), or with --resume continues from them (docs/durable-execution.md, "Resuming a
// failed task"). Asks first (or takes --yes).
import type { Command } from 'commander';
import { operatorTask } from '@mcp-tasks/engine';
import { ownerLabel } from '@mcp-tasks/runtime';
import { TaskKind, TaskStatus, type TaskRecord } from '@mcp-tasks/protocol';
import { confirm, refuseUnanswerable, withYesOption, type YesOption } from '../confirm.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator, type Operator } from '../operator.ts';

type RetryOptions = { json?: boolean; resume?: boolean } & YesOption;

export function registerRetry(program: Command, io: CliIo): void {
  const command = program
    .command('retry')
    .description(
      'Run a failed task again as a new task with the same tool, arguments, owner and ttl: from the start (its ' +
        'completed steps run again), or with --resume from its completed steps',
    )
    .argument('<taskId>', 'the failed task')
    .option(
      '--resume',
      "continue the failed task: the new task begins with its checkpoint, its completed steps and its child calls' " +
        'results, which do not run again (a failed task is resumed once)',
    )
    .option('--json', 'print {"retriedFrom": id, "resumed": bool, "task": {...}, "note"?: text} as JSON')
    .addHelpText(
      'after',
      '\nThe owner finds the new task in tasks/list; its statusMessage names the task it retries or resumes, and ' +
        '`mcpt inspect` links the two (resumedFrom / resumedBy).',
    );
  withYesOption(command, 'retry').action(async (taskId: string, options: RetryOptions) => {
    refuseUnanswerable(io, options, 'retry');
    const resume = options.resume === true;
    const { created, kept } = await withOperator(io, async (operator) => {
      const record = await operator.store.get(taskId);
      const kept = record ? await keptWork(operator, record) : undefined;
      // A task that cannot be retried gets the refusal of admin.retry, without a question first.
      if (record?.status === TaskStatus.Failed && record.kind === TaskKind.Task) {
        const what = `failed task ${taskId} (tool ${record.tool}, owner ${ownerLabel(record.owner)})`;
        await confirm(
          io,
          options,
          resume
            ? `Resume ${what} from its completed steps as a new task?`
            : `Run ${what} again as a new task${kept ? `? ${runAgain(kept)}` : '?'}`,
        );
      }
      const created = await operator.admin.retry(taskId, { service: operator.service, tool: operator.tool, resume });
      return { created, kept };
    });
    const note = resume || !kept ? undefined : `${runAgain(kept)} Add --resume to continue from them instead.`;
    emit(
      io,
      options.json === true,
      { retriedFrom: taskId, resumed: resume, task: operatorTask(created), ...(note ? { note } : {}) },
      () =>
        `${resume ? 'Resumed' : 'Retried'} task ${taskId} as new task ${created.taskId} (tool ${created.tool}, owner ` +
        `${ownerLabel(created.owner)}).${resume && kept ? ` It begins with what the failed task kept: ${describe(kept)}.` : ''}` +
        (note ? `\n${note}` : ''),
    );
  });
}

/** What a failed task's tool completed and kept (docs/durable-execution.md); undefined when nothing. */
async function keptWork(
  operator: Operator,
  record: TaskRecord,
): Promise<{ steps: number; calls: number; checkpoint: boolean } | undefined> {
  if (!record.durable) return undefined;
  const { steps } = await operator.store.durable.counts(record.taskId);
  const kept = { steps, calls: record.durable.children, checkpoint: record.durable.checkpoint !== undefined };
  return kept.steps + kept.calls > 0 || kept.checkpoint ? kept : undefined;
}

function describe(kept: { steps: number; calls: number; checkpoint: boolean }): string {
  const parts = [
    ...(kept.steps > 0 ? [`${kept.steps} completed step${kept.steps === 1 ? '' : 's'}`] : []),
    ...(kept.calls > 0 ? [`${kept.calls} child call${kept.calls === 1 ? '' : 's'}`] : []),
    ...(kept.checkpoint ? ['a checkpoint'] : []),
  ];
  return parts.join(', ').replace(/, ([^,]*)$/, ' and $1');
}

function runAgain(kept: { steps: number; calls: number; checkpoint: boolean }): string {
  return `The new task starts over: what the failed task kept (${describe(kept)}) does not carry over, and its completed steps run again.`;
}
