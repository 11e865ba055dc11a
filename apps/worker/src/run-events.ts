// The events of this process's runs, for the concerns beside running tools (graphile-worker's `events` map is the
// model): the metrics and the dashboard's figures subscribe here, so the BullMQ Workers' handlers (queue-workers.ts)
// only forward. The task transitions they also count come from the store's observers.
import { EventEmitter } from 'node:events';
import type { Job } from 'bullmq';
import { auditLogger, auditObserver, RunnerMetrics, type Engine, type ToolJobData } from '@mcp-tasks/engine';
import { type Logger } from '@mcp-tasks/runtime';

export interface RunEvents {
  /** A job became active on one of this process's tool-queue workers (BullMQ's 'active'). */
  'job:start': [job: Job<ToolJobData>];
  /** A job left that worker completed or failed; not a job moved back to the delayed set (held, handed back, polled). */
  'job:end': [job: Job<ToolJobData>];
}

export type RunEventEmitter = EventEmitter<RunEvents>;

/** The worker's metrics, audit records and (with DASHBOARD_FIGURES) the dashboard's figures of its tasks and runs. */
export function observeRuns(
  engine: Pick<Engine, 'store' | 'activity'>,
  log: Logger,
  figures: boolean,
): { metrics: RunnerMetrics; runEvents: RunEventEmitter } {
  const events: RunEventEmitter = new EventEmitter<RunEvents>();
  const metrics = new RunnerMetrics('worker');
  engine.store.observe(metrics.taskObserver());
  engine.store.observe(auditObserver(auditLogger(log))); // task.completed / failed / cancelled (T-AUDIT-1)
  events.on('job:start', (job) => metrics.jobStarted(job));
  if (figures) recordFigures(engine, events);
  return { metrics, runEvents: events };
}

/**
 * The dashboard's charts (activity.ts): the queue wait of each first attempt, and the run time from the start of the
 * attempt that settled the task. An entry lives while its job is active here, so there are about WORKER_CONCURRENCY
 * per tool queue; one of a job moved back to the delayed set (held, handed back, polled) stays until the job's next
 * start here, as BullMQ reports no end for it.
 */
function recordFigures(engine: Pick<Engine, 'store' | 'activity'>, events: RunEventEmitter): void {
  const attemptStarts = new Map<string, number>();
  engine.store.observe(
    engine.activity.observer((taskId, at) => {
      const started = attemptStarts.get(taskId);
      return started === undefined ? undefined : Math.max(0, at - started);
    }),
  );
  events.on('job:start', (job) => {
    const started = job.processedOn ?? Date.now();
    attemptStarts.set(job.data.taskId, started);
    if (job.attemptsStarted <= 1) engine.activity.started(Math.max(0, started - job.timestamp), started);
  });
  events.on('job:end', (job) => attemptStarts.delete(job.data.taskId));
}
