// What a run leaves on its BullMQ job so that a later attempt of the same job — on another worker process, after
// this one died or handed the job back — resumes the work instead of starting it again. Today that is the task an
// upstream MCP server runs for a gateway call (docs/gateway.md, "Durability across our worker's restart").
//
// It lives in the job's data rather than in the task record: it is the worker's private state of one execution,
// read only by the next attempt of that job, never rendered to a client, and gone with the job.
import type { Job } from 'bullmq';
import type { ToolJobData, UpstreamTaskRef } from '@mcp-tasks/engine';
import type { Logger } from '@mcp-tasks/runtime';
import type { ToolContext } from '@mcp-tasks/protocol';

export interface ResumePoint {
  /** The upstream task an earlier attempt of this job created, when this attempt may follow it. */
  readonly upstreamTask: UpstreamTaskRef | undefined;
  /** Stores the upstream task on the job (best effort: a failed write leaves the run as it was, logged). */
  saveUpstreamTask(ref: Omit<UpstreamTaskRef, 'attemptsMade'>): Promise<void>;
}

// Keyed by the run's context, so that the gateway reaches its job without the public ToolContext growing a member
// user tools would see.
const points = new WeakMap<ToolContext, ResumePoint>();

/** The upstream task a later attempt of `job` resumes, if any: not after a failed run, which the retry policy reruns. */
export function resumableUpstreamTask(job: Job<ToolJobData>): UpstreamTaskRef | undefined {
  const ref = job.data.upstreamTask;
  return ref !== undefined && ref.attemptsMade === job.attemptsMade ? ref : undefined;
}

export function attachResumePoint(context: ToolContext, job: Job<ToolJobData>, log: Logger): void {
  points.set(context, {
    upstreamTask: resumableUpstreamTask(job),
    async saveUpstreamTask(ref) {
      const upstreamTask: UpstreamTaskRef = { ...ref, attemptsMade: job.attemptsMade };
      try {
        await job.updateData({ ...job.data, upstreamTask });
        log.info('upstream task stored on the job', { upstream: ref.upstream, upstreamTaskId: ref.taskId });
      } catch (error) {
        log.warn('upstream task not stored on the job: a crash now would call the tool again', {
          upstream: ref.upstream,
          upstreamTaskId: ref.taskId,
          error: String(error),
        });
      }
    },
  });
}

export function resumePointOf(context: ToolContext): ResumePoint | undefined {
  return points.get(context);
}
