/**
 * What operators use: task administration (mcpt, the dashboard), the dashboard's per-minute figures, Prometheus
 * metrics, and maintenance (expiry sweep, reconciliation).
 */
export {
  ACTIVITY_MINUTES,
  ACTIVITY_TOP_OWNERS,
  type ActivityReport,
  ActivityRecorder,
  LATENCY_BOUNDS_MS,
  latencyBucketOf,
  latencyPercentile,
} from './activity.ts';
export { Maintenance, type MaintenanceOptions } from './maintenance.ts';
export { LiveStatusSnapshot, RunnerMetrics } from './metrics.ts';
export {
  AdminError,
  type DurableView,
  operatorInspection,
  operatorRecord,
  operatorTask,
  TaskAdmin,
  type QueueDepth,
  type StepView,
  type TaskFilter,
  type TaskInspection,
  type WebhookInspection,
} from './task-admin.ts';
