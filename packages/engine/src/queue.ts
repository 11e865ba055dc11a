// The BullMQ queue that carries tool calls: its name, job data contract and job options.
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from './redis.ts';

export const TOOL_QUEUE_NAME = 'tools';

/** Job data: everything a worker (ours or an external consumer) needs to run the call. */
export interface ToolJobData {
  taskId: string;
  tool: string;
  arguments: unknown;
}

export function createToolQueue(connection: RedisClient, prefix: string): Queue<ToolJobData> {
  return new Queue<ToolJobData>(TOOL_QUEUE_NAME, { connection, prefix });
}

/**
 * The job id is the task id (a UUID: no ':' and never an integer string, as BullMQ requires). Jobs are removed as
 * soon as they finish: the task record keeps the outcome, so the queue holds only work still to do.
 */
export function toolJobOptions(taskId: string, retrySafe: boolean): JobsOptions {
  return {
    jobId: taskId,
    attempts: retrySafe ? 3 : 1,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}
