// An attempt lost to a crash, in its task's trace (docs/observability.md). A worker killed mid-attempt never ends
// its `execute_tool` span, so no exporter ever sends it. While tracing is on, each attempt's start is noted in the
// task's record (TaskStore.markAttemptStarted) and removed when it ends; whoever comes next takes the attempts left
// (the job's next attempt as it starts, or the reconciler as it settles the task) and records each here: a span of
// the same name and attributes as an attempt's own, from its start to the moment it was noticed, with an error status.
import type { AttemptStart } from '../records/store.ts';
import { SpanKind, SpanStatusCode, tracer, type TraceContext as Context } from '@mcp-tasks/runtime';

/**
 * What a task says once a worker found that the worker running it is gone (lost-jobs.ts): the attempt is lost, and
 * the task waits for another worker (until one starts it: "Running on <worker>.").
 */
export function lostAttemptMessage(attempt: number, worker: string): string {
  return (
    `Attempt ${attempt} was lost: ${worker} stopped without finishing it (killed, out of memory, or cut off ` +
    'from Redis). The task waits for another worker.'
  );
}

/** What a task says once the worker running it handed it back on shutdown, until another worker starts it. */
export function handedBackMessage(attempt: number, worker: string): string {
  return `Attempt ${attempt} was handed back by ${worker}, which is shutting down. The task waits for another worker.`;
}

export function traceLostAttempts(
  parent: Context,
  task: { taskId: string; tool: string },
  lost: readonly AttemptStart[],
  /** Who noticed: `attempt <n>` or `reconciler`. */
  noticedBy: string,
): void {
  const otel = tracer();
  if (!otel) return;
  const now = Date.now();
  for (const { attempt, at, worker } of lost) {
    const span = otel.startSpan(
      `execute_tool ${task.tool}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: {
          'mcp.task.id': task.taskId,
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': task.tool,
          'mcp.task.attempt': attempt,
          'mcp.worker.name': worker,
          'mcp.task.attempt.lost': true,
          'mcp.task.attempt.noticed_by': noticedBy,
        },
      },
      parent,
    );
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: `The worker running attempt ${attempt} (${worker}) stopped without ending it: killed, or cut off from Redis`,
    });
    // Its true end is unknown: the span ends when the loss was noticed.
    span.end(Math.max(now, at));
  }
}
