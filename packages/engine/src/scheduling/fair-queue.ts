// Fair order between principals (docs/scheduling.md, "Fairness"): each job of a tool's queue gets a BullMQ priority,
// computed by create-task-6.lua in the step that writes the task, so that principals' jobs interleave round robin
// (weighted by SCHEDULING weights) instead of starting in arrival order.
import { MAX_JOB_PRIORITY } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import type { KeySpace } from '../keys.ts';
import type { SchedulingSettings } from './scheduling-config.ts';
import type { FairOrderCall } from '../scripts.ts';

/** A principal of weight 1 moves this many priority steps per job; weight w moves 12 / w (at least 1). */
export const FAIR_STEP = 12;

export function fairStep(weight: number): number {
  return Math.max(1, Math.round(FAIR_STEP / weight));
}

export class FairQueue {
  constructor(
    private readonly keys: KeySpace,
    private readonly settings: SchedulingSettings,
  ) {}

  /** What the script creating the principal's next task for the tool needs to give its job a fair priority. */
  orderFor(tool: string, queue: Queue, principal: string): FairOrderCall {
    return {
      keys: { fairQueue: this.keys.fairQueue(tool), prioritized: queue.keys['prioritized'] as string },
      principal,
      step: fairStep(this.settings.weightOf(principal)),
      maxPriority: MAX_JOB_PRIORITY,
    };
  }
}
