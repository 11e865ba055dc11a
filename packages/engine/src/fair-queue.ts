// Fair order between principals (docs/scheduling.md, "Fairness"): each job of a tool's queue gets a BullMQ priority
// from fair-priority-2.lua, so that principals' jobs interleave round robin (weighted by SCHEDULING weights) instead
// of starting in arrival order.
import { MAX_JOB_PRIORITY } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import type { SchedulingSettings } from './scheduling-config.ts';
import { RedisScripts } from './scripts.ts';

/** A principal of weight 1 moves this many priority steps per job; weight w moves 12 / w (at least 1). */
export const FAIR_STEP = 12;

export function fairStep(weight: number): number {
  return Math.max(1, Math.round(FAIR_STEP / weight));
}

export class FairQueue {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly settings: SchedulingSettings,
  ) {}

  /** The priority of the principal's next job in the tool's queue (a task that lives `ttlMs`). */
  priorityFor(tool: string, queue: Queue, principal: string, ttlMs: number): Promise<number> {
    return RedisScripts.on(this.redis).fairPriority({
      keys: { fairQueue: this.keys.fairQueue(tool), prioritized: queue.keys['prioritized'] as string },
      principal,
      step: fairStep(this.settings.weightOf(principal)),
      maxPriority: MAX_JOB_PRIORITY,
      ttlMs,
    });
  }
}
