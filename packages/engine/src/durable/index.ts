/**
 * Durable execution beside the records: events sent to tasks and the waking of parked jobs (TaskSignals), and
 * what operators see of parked tasks.
 */
export { type ParkedEntry, type ParkedOverview, type WaitsView } from './parked-view.ts';
export {
  EVENT_NAME,
  SignalEnvSchema,
  type SignalEnv,
  type SignalOutcome,
  type SignalRequest,
  TaskSignals,
} from './task-signals.ts';
