// The spans of one attempt of a job (docs/observability.md): the queue wait before a first attempt, the tool run
// of this attempt, and, as children of the run, the input waits and the final transition. They join the trace of
// the api request that queued the job (ToolJobData.trace). Made only while tracing is on: `startJobTrace` answers
// undefined otherwise and callers skip every step with `?.`.
import type { Job } from 'bullmq';
import {
  contextOf,
  endWithError,
  SpanKind,
  tracer,
  withSpan,
  type Attributes,
  type Span,
  type ToolJobData,
  type TraceContext,
} from '@mcp-tasks/engine';

export interface JobTrace {
  /** The context the attempt's children start in. */
  readonly context: TraceContext;
  note(attributes: Attributes): void;
  /** Ends the run span: failed when `error` is given (a thrown error that is not the job handing itself back). */
  end(error?: unknown): void;
}

export function startJobTrace(job: Job<ToolJobData>, workerName: string): JobTrace | undefined {
  const otel = tracer();
  if (!otel) return undefined;
  const parent = contextOf(job.data.trace);
  const attempt = job.attemptsStarted;
  const common = { 'mcp.task.id': job.data.taskId, 'messaging.destination.name': job.queueName };
  if (attempt <= 1) {
    // BullMQ stamps the job when it is added and when a worker takes it: the wait is known only now, after it.
    otel
      .startSpan('queue wait', { kind: SpanKind.CONSUMER, startTime: job.timestamp, attributes: common }, parent)
      .end(job.processedOn ?? Date.now());
  }
  const run: Span = otel.startSpan(
    `execute_tool ${job.data.tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...common,
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': job.data.tool,
        'mcp.task.attempt': attempt,
        'mcp.worker.name': workerName,
      },
    },
    parent,
  );
  const context = withSpan(parent, run);
  return {
    context,
    note: (attributes) => run.setAttributes(attributes),
    end: (error) => (error === undefined ? run.end() : endWithError(run, error)),
  };
}

/** Runs `work` inside a child span of the attempt (an input wait, the final transition); ends it either way. */
export async function inChildSpan<T>(
  parent: TraceContext | undefined,
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const otel = parent ? tracer() : undefined;
  if (!otel || !parent) return work(undefined);
  const span = otel.startSpan(name, { attributes }, parent);
  try {
    const result = await work(span);
    span.end();
    return result;
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
}
