// The spans of one attempt of a job (docs/observability.md): the queue wait before a first attempt, the tool run
// of this attempt, and, as children of the run, the input waits and the final transition; and those of earlier
// attempts lost to a crash. They join the trace of the api request that queued the job (ToolJobData.trace). Made
// only while tracing is on: `startJobTrace` answers undefined otherwise and callers skip every step with `?.`.
import type { Job } from 'bullmq';
import { traceLostAttempts, type TaskStore, type ToolJobData } from '@mcp-tasks/engine';
import {
  contextOf,
  endWithError,
  SpanKind,
  tracer,
  withSpan,
  type Attributes,
  type Span,
  type TraceContext,
} from '@mcp-tasks/runtime';

export interface JobTrace {
  /** The context the attempt's children start in. */
  readonly context: TraceContext;
  note(attributes: Attributes): void;
  /** Ends the run span: failed when `error` is given (a thrown error that is not the job handing itself back). */
  end(error?: unknown): void;
}

export interface JobTraceDeps {
  workerName: string;
  /** Where the attempt's start is noted until it ends, so that a kill mid-attempt still shows in the trace. */
  store: Pick<TaskStore, 'markAttemptStarted' | 'markAttemptEnded'>;
  /** Whether this worker serves a tool: span names stay a bounded set (OTHER_TOOL otherwise). */
  knownTool: (name: string) => boolean;
}

/** The span name's tool when the worker does not serve the job's (a job any producer could have queued). */
export const OTHER_TOOL = '_OTHER';

/**
 * Starts the spans of an attempt and notes its start in the task's record; the attempts its record still notes
 * were lost to a crash (their worker never ended them) and are recorded now (traceLostAttempts).
 */
export async function startJobTrace(job: Job<ToolJobData>, deps: JobTraceDeps): Promise<JobTrace | undefined> {
  const otel = tracer();
  if (!otel) return undefined;
  const parent = contextOf(job.data.trace);
  const attempt = job.attemptsStarted;
  const { taskId } = job.data;
  const tool = deps.knownTool(job.data.tool) ? job.data.tool : OTHER_TOOL;
  const common = { 'mcp.task.id': taskId, 'messaging.destination.name': job.queueName };
  if (attempt <= 1) {
    // BullMQ stamps the job when it is added and when a worker takes it: the wait is known only now, after it.
    otel
      .startSpan('queue wait', { kind: SpanKind.CONSUMER, startTime: job.timestamp, attributes: common }, parent)
      .end(job.processedOn ?? Date.now());
  }
  const startedAt = Date.now();
  const run: Span = otel.startSpan(
    `execute_tool ${tool}`,
    {
      kind: SpanKind.INTERNAL,
      startTime: startedAt,
      attributes: {
        ...common,
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool,
        'mcp.task.attempt': attempt,
        'mcp.worker.name': deps.workerName,
      },
    },
    parent,
  );
  // Awaited, so that the attempt's end is noted after its start. A note that fails costs the trace a span if this
  // worker dies, never the run.
  const lost = await deps.store
    .markAttemptStarted(taskId, { attempt, at: startedAt, worker: deps.workerName })
    .catch(() => []);
  traceLostAttempts(parent, { taskId, tool }, lost, `attempt ${attempt}`);
  const context = withSpan(parent, run);
  return {
    context,
    note: (attributes) => run.setAttributes(attributes),
    end: (error) => {
      if (error === undefined) run.end();
      else endWithError(run, error);
      deps.store.markAttemptEnded(taskId, attempt).catch(() => undefined);
    },
  };
}

/**
 * Runs `work` inside a child span of the attempt (an input wait, a step, a child call, the final transition); ends it
 * either way. `work` gets the span and the context its own children start in (a child task's trace).
 */
export async function inChildSpan<T>(
  parent: TraceContext | undefined,
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined, context: TraceContext | undefined) => Promise<T>,
): Promise<T> {
  const otel = parent ? tracer() : undefined;
  if (!otel || !parent) return work(undefined, parent);
  const span = otel.startSpan(name, { attributes }, parent);
  try {
    const result = await work(span, withSpan(parent, span));
    span.end();
    return result;
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
}
