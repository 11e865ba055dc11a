// The BullMQ queue that carries tool calls: its name, job data contract and job options.
import { retryPolicyOf, toolQueueName, type Scheduling, type TaskRecord } from '@mcp-tasks/protocol';
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from './redis.ts';
import type { TraceCarrier } from '@mcp-tasks/runtime';

/**
 * The queue all tools shared before the catalog (docs/catalog.md, "Queues"): no job is added to it any more; workers
 * still drain what an older api left in it.
 */
export const TOOL_QUEUE_NAME = 'tools';

/** The queue that holds a task's job: its external consumer's, or the tool's own queue. */
export function jobQueueOf(record: Pick<TaskRecord, 'tool' | 'external'>): string {
  const { external } = record;
  return external?.mode === 'queue' && external.queue !== undefined ? external.queue : toolQueueName(record.tool);
}

/** Job data: everything a worker (ours or an external consumer) needs to run the call. */
export interface ToolJobData {
  taskId: string;
  tool: string;
  arguments: unknown;
  /** The W3C trace context of the api request that created the task; present only while tracing is on. */
  trace?: TraceCarrier;
  /** The task's principal, for operators' counts of queued jobs per principal (absent in jobs of earlier versions). */
  owner?: string;
  /**
   * The task an upstream MCP server runs for this call (docs/gateway.md), written by the worker that created it: a
   * later attempt of the job follows that task instead of calling the tool again. Only our workers write it, and
   * only in jobs of our own tool queues.
   */
  upstreamTask?: UpstreamTaskRef;
}

/** Where an upstream's task for a job can be found again by another worker process. */
export interface UpstreamTaskRef {
  /** The upstream's name in the worker's configuration. */
  upstream: string;
  /** The upstream's task id. */
  taskId: string;
  /** The Streamable HTTP session that created the task: servers may keep their tasks per session. */
  sessionId?: string;
  /**
   * `job.attemptsMade` when the task was created: a run after a failed one (a retry) calls the tool afresh; only a
   * run after a crash or a hand-back (which leave this count alone) resumes.
   */
  attemptsMade: number;
}

export function createToolQueue(connection: RedisClient, prefix: string): Queue<ToolJobData> {
  const queue = new Queue<ToolJobData>(TOOL_QUEUE_NAME, { connection, prefix });
  // Its errors are those of the connection it shares, which its owner logs (RedisConnectionLog); unheard, BullMQ
  // printed each with its stack on stderr, several a second while Redis was down.
  queue.on('error', () => undefined);
  return queue;
}

/**
 * The backoff type of our tool queues' jobs: the worker's backoffStrategy computes each wait from the tool's retry
 * policy as the worker has it (docs/scheduling.md, "Retries").
 */
export const RETRY_BACKOFF_TYPE = 'mcpt-retry';

/** Attempts BullMQ grants a job whose processor fails for reasons outside the tool (Redis errors), as before. */
const INFRASTRUCTURE_ATTEMPTS = 3;

/**
 * Options of a job in one of our tool queues. The job id is the task id (a UUID: no ':' and never an integer string,
 * as BullMQ requires). Jobs are removed as soon as they finish: the task record keeps the outcome, so the queue holds
 * only work still to do. The fair priority between principals (FairQueue) is not among them: create-task-6.lua
 * computes it and adds it to the job it writes (scriptedJob, `prioritized`). The worker decides whether an error the
 * tool throws is retried (its retry policy); BullMQ's attempts only have to allow it.
 */
export function toolJobOptions(
  taskId: string,
  retrySafe: boolean,
  scheduling?: Scheduling,
): JobsOptions & { jobId: string } {
  return {
    jobId: taskId,
    attempts: Math.max(retryPolicyOf(scheduling).attempts, retrySafe ? INFRASTRUCTURE_ATTEMPTS : 1),
    backoff: { type: RETRY_BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

/** How long an external consumer's finished job stays readable (contract v1): see externalJobOptions. */
export const EXTERNAL_JOB_RETENTION = { age: 24 * 60 * 60, count: 10_000 } as const;

/**
 * An external tool's job, in its own queue (ext-<tool>), written by create-task-6.lua with its record as a standard
 * job (scriptedJob): the same options as ours, except that it is kept for a while after it finishes. Its outcome
 * reaches us as a queue event; should the event be missed or still be on its way when the reconciler looks, the
 * reconciler settles the task from the kept job instead of calling it lost.
 */
export function externalJobOptions(taskId: string, retrySafe: boolean): JobsOptions & { jobId: string } {
  return {
    ...toolJobOptions(taskId, retrySafe),
    // An external consumer computes its own waits: BullMQ's own strategy, as in contract v1.
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: EXTERNAL_JOB_RETENTION,
    removeOnFail: EXTERNAL_JOB_RETENTION,
  };
}
