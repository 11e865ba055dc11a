// The control channel from the api to every worker: BullMQ's own cancelJob reaches only the worker instance that
// holds the job, so cancellation is broadcast and each worker aborts the tasks it runs.
import type { Queue } from 'bullmq';
import { z } from 'zod';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';

export const ControlMessageSchema = z.object({ type: z.literal('cancel'), taskId: z.string() });
export type ControlMessage = z.infer<typeof ControlMessageSchema>;

export function parseControlMessage(raw: string): ControlMessage | undefined {
  try {
    const parsed = ControlMessageSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops a task's work wherever it is: a queued job is removed from each of `queues` (its tool's queue, and the shared
 * queue an api from before the catalog used), a running one is aborted by its worker.
 */
export async function stopTaskWork(
  queues: readonly Queue[],
  publisher: RedisClient,
  keys: KeySpace,
  taskId: string,
): Promise<void> {
  // A job held by a worker is locked and cannot be removed from here; the control message reaches its worker.
  await Promise.all(queues.map((queue) => queue.remove(taskId).catch(() => 0)));
  const message: ControlMessage = { type: 'cancel', taskId };
  await publisher.publish(keys.controlChannel(), JSON.stringify(message));
}
