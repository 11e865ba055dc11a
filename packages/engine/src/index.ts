/**
 * @mcp-tasks/engine — the runner's Redis side, as api, workers and the CLI use it: the composition root
 * (`createEngine`), task records, sessions and their event streams, input requests, the tool queue, maintenance,
 * security (rate limits, connection slots, audit, redaction), metrics, configuration and Redis connections.
 * Everything else in this package (Lua scripts and their registry, record codecs and indexes) is internal; this
 * list is the whole surface, pinned by test/unit/public-surface.test.ts.
 *
 * @example
 * const redis = createRedis('redis://127.0.0.1:6379', 'api');
 * const engine = createEngine({ redis }, { REDIS_PREFIX: 'mcpt', SESSION_IDLE_TTL_MS: 3_600_000 });
 * const record = await engine.store.get(taskId);
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
export { audit, AuditEvent, type AuditFields, auditLogger, auditObserver } from './audit.ts';
export { CallbackEnvSchema, callbackUrl, signCallbackToken, verifyCallbackToken } from './callback-token.ts';
export { CatalogConflictError, type CatalogRefusal, CatalogView, logCatalogRefusals } from './catalog.ts';
export { unservedMessage, withServedStatus } from './unserved.ts';
export { CleanupStack, onShutdownSignal, stopOnShutdownSignal } from './cleanup.ts';
export {
  catalogBoundsOf,
  CatalogEnvSchema,
  ConfigError,
  intFromEnv,
  LogEnvSchema,
  MetricsEnvSchema,
  parseEnv,
  PrincipalRateEnvSchema,
  RedisEnvSchema,
  schemaBudgetOf,
  SessionEnvSchema,
  TaskEnvSchema,
} from './config.ts';
export { type ConnectionSlot, ConnectionSlots } from './connection-slots.ts';
export { createEngine, type Engine } from './engine.ts';
export { ExternalQueueListener, ExternalQueues } from './external-queues.ts';
export { ExternalTasks, forwardCancel } from './external.ts';
export { fairStep } from './fair-queue.ts';
export { GatewayState, type UpstreamStatus } from './gateway.ts';
export { type AnswerVerdict, type InputAnswer, InputBroker } from './input-broker.ts';
export { KeySpace } from './keys.ts';
export { decodeCursor, encodeCursor, indexMember } from './list-cursor.ts';
export { listenOn, type ListenTarget } from './listen.ts';
export { createLogger, type Logger } from './logger.ts';
export { Maintenance, type MaintenanceOptions } from './maintenance.ts';
export { LiveStatusSnapshot, METRICS_CHALLENGE, metricsAccessAllowed, RunnerMetrics } from './metrics.ts';
export {
  hostAllowed,
  hostRefusal,
  isLoopbackHost,
  metricsAccess,
  type MetricsGate,
  metricsWarning,
} from './metrics-access.ts';
export { OwnerCaps, type RunClaim } from './owner-caps.ts';
export { BULLMQ_JOB_LAYOUT_VERSION, ToolQueueWorker } from './bullmq/index.ts';
export { createToolQueue, TOOL_QUEUE_NAME, type ToolJobData, toolJobOptions, type UpstreamTaskRef } from './queue.ts';
export {
  type RateCharge,
  RateLimiter,
  RateScope,
  type RateVerdict,
  registerSecurityCounters,
  SecurityEvent,
} from './rate-limiter.ts';
export { TaskKeys } from './records/keys.ts';
export { type DurableEntry, type DurableSnapshot, EMPTY_SNAPSHOT, type FiledCall } from './records/durable.ts';
export { type ParkedEntry, type ParkedOverview, type WaitsView } from './parked-view.ts';
export {
  type ParkedTask,
  type PendingWait,
  readStoredWait,
  stepTriesKey,
  type StoredWait,
  type WaitOutcome,
} from './records/waits.ts';
export {
  AttemptEnding,
  type AttemptRun,
  type AttemptStart,
  DEFAULT_SESSION_STREAM,
  type TaskPage,
  TaskStore,
} from './records/store.ts';
export { type AttemptEntry } from './records/codec.ts';
export { handedBackMessage, lostAttemptMessage, traceLostAttempts } from './lost-attempts.ts';
export {
  connectedInstances,
  isClientCommandRefused,
  type LostJob,
  LostJobs,
  workerConnectionName,
  workerInstance,
  workerOf,
} from './lost-jobs.ts';
export {
  isSecretVariable,
  isSessionOwnerLabel,
  maskUrlPasswords,
  ownerLabel,
  redactSessionFields,
  sessionDigest,
} from './redact.ts';
export {
  clusterOptions,
  type ClusterSeeds,
  describeRedisTarget,
  hashTagOf,
  parseClusterNodes,
  prefixPinsOneSlot,
} from './redis-target.ts';
export { closeRedis, coalesceWrites, createRedis, type RedisClient } from './redis.ts';
export { isConnectionError, RedisConnectionLog, type RedisConnectionLogOptions } from './redis-log.ts';
export { loadSchedulingSettings, SchedulingEnvSchema, type SchedulingSettings } from './scheduling-config.ts';
export { SessionEvents, type StreamEvent, type StreamMessage } from './session-events.ts';
export { type RequestOpening, RequestRefusedError } from './request-opening.ts';
export { type RequestContextRecord } from './request-context.ts';
export { type SessionCalls } from './session-calls.ts';
export { type Session, type SessionAdmission, SessionCap, SessionStore } from './sessions.ts';
export { SigningKeys } from './signing-keys.ts';
export { parseControlMessage } from './stop-task-work.ts';
export { Subscriber, type Waiter, type WakeOn } from './subscriber.ts';
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
export { type CreatedTask, type CreateTaskInput, TaskService, type WaitOptions } from './task-service.ts';
export {
  createTaskFromEntry,
  createWatchedTaskFromEntry,
  type EntryTaskInput,
  type TaskRequester,
} from './task-from-entry.ts';
export {
  EVENT_NAME,
  SignalEnvSchema,
  type SignalEnv,
  type SignalOutcome,
  type SignalRequest,
  TaskSignals,
} from './task-signals.ts';
export {
  type ArgumentsVerdict,
  DEFAULT_SCHEMA_BUDGET,
  SchemaBudget,
  type SchemaBudgetSettings,
} from './schema-budget.ts';
export { ArgumentValidator } from './tool-arguments.ts';
export {
  type Attributes,
  carrierFor,
  clientContext,
  type Context as TraceContext,
  contextOf,
  endWithError,
  linkTo,
  type Span,
  SpanKind,
  SpanStatusCode,
  startTracing,
  type TraceCarrier,
  tracer,
  type TracingHandle,
  tracingRequested,
  withSpan,
} from './tracing.ts';
export { OutboundTargets } from './outbound-targets.ts';
export { type DeliveryAttempt, type WebhookView } from './records/webhooks.ts';
export { WebhookDelivery, webhookBody } from './webhook-delivery.ts';
export { loadWebhookSettings, WebhookEnvSchema, type WebhookSettings } from './webhook-settings.ts';
export { parseWebhookSecrets, webhookSignature } from './webhook-signing.ts';
export {
  applyQueueLimits,
  countSchedulingEvent,
  SchedulingCounter,
  type SchedulingView,
  type ToolSchedulingView,
} from './tool-limits.ts';
