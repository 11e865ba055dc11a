// The worker's side of scheduling that runs on timers (docs/scheduling.md): the global limits of the tools it runs,
// applied to their queues at start and again at every heartbeat, and the run leases of the per-principal caps,
// renewed while the runs go on.
import { applyQueueLimits, OwnerCaps, type ExternalQueues, type SchedulingSettings } from '@mcp-tasks/engine';
import { type CleanupStack, type Logger } from '@mcp-tasks/runtime';
import { HeldRuns } from './scheduling.ts';
import type { ServedTools } from './served-tools.ts';
import type { WorkerEngine } from './worker-engine.ts';

export async function keepQueueLimits(
  served: ServedTools,
  queues: ExternalQueues,
  everyMs: number,
  log: Logger,
  cleanup: CleanupStack,
): Promise<void> {
  const apply = () =>
    Promise.all(served.entriesRunHere().map((entry) => applyQueueLimits(queues.get(entry.queue), entry.scheduling)));
  await apply();
  // Again at every heartbeat: the settings come back after a Redis restart that lost them.
  const timer = setInterval(() => {
    apply().catch((error: unknown) => log.warn('queue limits not applied', { error: String(error) }));
  }, everyMs);
  timer.unref();
  cleanup.add('queue-limits', timer, clearInterval);
}

/** The per-principal caps, and the runs this worker holds under them: their leases renewed, a sweep now and then. */
export function startOwnerCaps(
  { redis, engine }: WorkerEngine,
  settings: SchedulingSettings,
  leaseMs: number,
  log: Logger,
  cleanup: CleanupStack,
): { owner: OwnerCaps; held: HeldRuns } {
  const owner = new OwnerCaps(redis, engine.keys, engine.externalQueues, {
    maxRunningPerOwner: settings.maxRunningPerOwner,
    leaseMs,
  });
  const held = new HeldRuns(owner);
  held.start(Math.max(100, Math.floor(leaseMs / 3)), settings.ownerCapRecheckMs, (error) =>
    log.warn('per-requestor caps not maintained', { error: String(error) }),
  );
  cleanup.add('held-runs', held, (h) => h.stop());
  return { owner, held };
}
