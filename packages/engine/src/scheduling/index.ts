/**
 * Scheduling (docs/scheduling.md): its settings, the fair queue across owners, owner caps, and per-tool
 * concurrency and rate limits.
 */
export { fairStep } from './fair-queue.ts';
export { OwnerCaps, type RunClaim } from './owner-caps.ts';
export { loadSchedulingSettings, SchedulingEnvSchema, type SchedulingSettings } from './scheduling-config.ts';
export {
  applyQueueLimits,
  countSchedulingEvent,
  SchedulingCounter,
  type SchedulingView,
  type ToolSchedulingView,
} from './tool-limits.ts';
