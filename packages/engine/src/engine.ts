// The composition root of the engine: api, workers and the CLI build their Redis-side objects here, from their
// connections and their configuration, so that they cannot disagree on key names, lifetimes or limits.
import { ActivityRecorder } from './activity.ts';
import type { Queue } from 'bullmq';
import { ToolCatalog } from './catalog.ts';
import {
  catalogBoundsOf,
  CatalogEnvSchema,
  MIN_TASK_TTL_MS,
  schemaBudgetOf,
  TaskEnvSchema,
  type CatalogEnv,
  type MetricsEnv,
  type RedisEnv,
  type SessionEnv,
  type TaskEnv,
} from './config.ts';
import { FairQueue } from './fair-queue.ts';
import { GatewayState } from './gateway.ts';
import {
  loadSchedulingSettings,
  SchedulingEnvSchema,
  type SchedulingEnv,
  type SchedulingSettings,
} from './scheduling-config.ts';
import { SchemaBudget } from './schema-budget.ts';
import { SessionEvents } from './session-events.ts';
import { SchedulingView } from './tool-limits.ts';
import { ExternalTasks } from './external.ts';
import { ExternalQueues } from './external-queues.ts';
import { InputBroker } from './input-broker.ts';
import { KeySpace } from './keys.ts';
import { checkJobLayoutVersion, installedBullmqVersion } from './bullmq/index.ts';
import { createToolQueue, type ToolJobData } from './queue.ts';
import type { RedisClient } from './redis.ts';
import { SessionCalls } from './session-calls.ts';
import { SessionStore } from './sessions.ts';
import { SigningKeys } from './signing-keys.ts';
import { Subscriber } from './subscriber.ts';
import { TaskAdmin } from './task-admin.ts';
import { TaskService, type TaskTiming } from './task-service.ts';
import { SIGNAL_DEFAULTS, TaskSignals, type SignalEnv } from './task-signals.ts';
import { ArgumentValidator } from './tool-arguments.ts';
import { DEFAULT_SESSION_STREAM, TaskStore } from './records/store.ts';
import { loadWebhookSettings, WebhookEnvSchema, type WebhookEnv, type WebhookSettings } from './webhook-settings.ts';

export interface EngineConnections {
  /** The runner's own commands: records, sessions, event streams, scripts. */
  redis: RedisClient;
  /**
   * BullMQ's queues; default `redis`. Long-running processes give them a connection of their own: ioredis copies
   * every script defined on a connection (BullMQ defines 60-odd) into each MULTI made on it.
   */
  queues?: RedisClient;
  /** Pub/sub for the waiters of tasks and input requests; default `redis`, for a process that never waits. */
  subscriber?: RedisClient;
}

/**
 * What the engine reads of a process's configuration. The task timing is the api's (docs/configuration.md);
 * a process that creates tasks only from other tasks (the CLI's retry) or not at all gets its documented defaults.
 */
export type EngineConfig = Pick<RedisEnv, 'REDIS_PREFIX'> &
  SessionEnv &
  Partial<TaskEnv> &
  Partial<CatalogEnv> &
  Partial<SchedulingEnv> &
  Partial<WebhookEnv> &
  Partial<Pick<MetricsEnv, 'DASHBOARD_FLUSH_MS'>> &
  Partial<SignalEnv> & {
    /** The most unfinished tasks one owner may have; absent: no cap. */
    MAX_TASKS_PER_OWNER?: number;
    /** The most live sessions of one principal and of one client address (0: no cap); absent: no cap. */
    MAX_SESSIONS_PER_PRINCIPAL?: number;
    MAX_SESSIONS_PER_ADDRESS?: number;
  };

export interface Engine {
  keys: KeySpace;
  store: TaskStore;
  sessions: SessionStore;
  /** The plain calls of each session by JSON-RPC request id, for notifications/cancelled (the api's). */
  sessionCalls: SessionCalls;
  /** The keys that sign the 2026-07-28 wire's requestStates, one per rotation period (the api's). */
  signingKeys: SigningKeys;
  events: SessionEvents;
  subscriber: Subscriber;
  inputs: InputBroker;
  /** The queue all tools shared before the catalog; only drained now (docs/catalog.md, "Queues"). */
  queue: Queue<ToolJobData>;
  /**
   * Every tool's queue by name, opened on first use: `tool-<name>` for our workers' tools, the consumer's queue for
   * tools served outside the runner (docs/job-contract.md).
   */
  externalQueues: ExternalQueues;
  /** The tool catalog workers publish to and api replicas list (docs/catalog.md). */
  catalog: ToolCatalog;
  /** The one validation of a call's arguments against its tool's published schema, within the schema budget. */
  arguments: ArgumentValidator;

  /** What the workers' gateways to upstream MCP servers share (docs/gateway.md). */
  gateway: GatewayState;
  tasks: TaskService;
  /** Events sent to tasks, and the waking of parked tasks (docs/durable-execution.md, "Waits"). */
  signals: TaskSignals;
  /** Operators' scheduling settings (SCHEDULING, SCHEDULING_FILE, MAX_RUNNING_PER_OWNER; docs/scheduling.md). */
  scheduling: SchedulingSettings;
  /** What operators see of each tool's scheduling. */
  schedulingView: SchedulingView;
  /** The webhook settings (WEBHOOK_*, WEBHOOKS_*; docs/webhooks.md): secrets, per-principal webhooks, targets, bounds. */
  webhooks: WebhookSettings;
  external: ExternalTasks;
  admin: TaskAdmin;
  /** The dashboard's per-minute figures of the last hour (activity.ts). */
  activity: ActivityRecorder;
  /** A TaskService like `tasks` with other timing (the CLI's retry keeps the original task's ttl and pollInterval). */
  tasksWith(timing: Partial<TaskTiming>): TaskService;
  /** Sends the pending dashboard figures and closes the queues; the connections stay open: they are the caller's. */
  close(): Promise<void>;
}

/** What createEngine checks of the installation before it starts anything. */
export interface EngineChecks {
  /**
   * The installed BullMQ version (default: read from bullmq's package.json): anything but BULLMQ_JOB_LAYOUT_VERSION
   * is refused with a BullmqVersionError (a ConfigError) that says what to install. Tests give another one.
   */
  bullmqVersion?: string;
}

const TASK_DEFAULTS = TaskEnvSchema.parse({});
const CATALOG_DEFAULTS = CatalogEnvSchema.parse({});
const SCHEDULING_DEFAULTS = SchedulingEnvSchema.parse({});
const WEBHOOK_DEFAULTS = WebhookEnvSchema.parse({});

export function createEngine(connections: EngineConnections, config: EngineConfig, checks: EngineChecks = {}): Engine {
  // Every process (api, worker, cli) builds its engine here, before it serves anything: one place to refuse a BullMQ
  // whose jobs create-task-6.lua would write wrongly.
  checkJobLayoutVersion(checks.bullmqVersion ?? installedBullmqVersion());
  const { redis } = connections;
  const keys = new KeySpace(config.REDIS_PREFIX);
  const streams = { ...DEFAULT_SESSION_STREAM, idleMs: config.SESSION_IDLE_TTL_MS };
  const webhooks = loadWebhookSettings({
    ...WEBHOOK_DEFAULTS,
    ...definedOnly<WebhookEnv>(config, Object.keys(WebhookEnvSchema.shape)),
  });
  const store = new TaskStore(redis, keys, streams, { maxPending: webhooks.maxPending });
  const events = new SessionEvents(redis, keys, streams);
  const subscriber = new Subscriber(connections.subscriber ?? redis);
  const queue = createToolQueue(connections.queues ?? redis, config.REDIS_PREFIX);
  const externalQueues = new ExternalQueues(connections.queues ?? redis, config.REDIS_PREFIX);
  const timing: TaskTiming = {
    defaultTtlMs: config.TASK_TTL_DEFAULT_MS ?? TASK_DEFAULTS.TASK_TTL_DEFAULT_MS,
    maxTtlMs: config.TASK_TTL_MAX_MS ?? TASK_DEFAULTS.TASK_TTL_MAX_MS,
    minTtlMs: MIN_TASK_TTL_MS,
    pollIntervalMs: config.TASK_POLL_INTERVAL_MS ?? TASK_DEFAULTS.TASK_POLL_INTERVAL_MS,
    recheckMs: config.RESULT_RECHECK_MS ?? TASK_DEFAULTS.RESULT_RECHECK_MS,
  };
  const limits = {
    ...(config.MAX_TASKS_PER_OWNER !== undefined ? { maxLiveTasksPerOwner: config.MAX_TASKS_PER_OWNER } : {}),
    maxChildrenPerTask: config.MAX_CHILDREN_PER_TASK ?? TASK_DEFAULTS.MAX_CHILDREN_PER_TASK,
  };
  const scheduling = loadSchedulingSettings({
    ...SCHEDULING_DEFAULTS,
    ...definedOnly<SchedulingEnv>(config, Object.keys(SchedulingEnvSchema.shape)),
  });
  const fairQueue = new FairQueue(keys, scheduling);
  const tasksWith = (changes: Partial<TaskTiming>) =>
    new TaskService(store, redis, subscriber, { ...timing, ...changes }, limits)
      .useExternalQueues(externalQueues)
      .useFairQueue(fairQueue);
  const catalogSetting = <K extends keyof CatalogEnv>(name: K): CatalogEnv[K] => config[name] ?? CATALOG_DEFAULTS[name];
  const schemas = new SchemaBudget(catalogBoundsOf(config), schemaBudgetOf(config));
  const catalog = new ToolCatalog(
    redis,
    keys,
    {
      CATALOG_GRACE_MS: catalogSetting('CATALOG_GRACE_MS'),
      CATALOG_HEARTBEAT_MS: catalogSetting('CATALOG_HEARTBEAT_MS'),
    },
    schemas,
  );
  const schedulingView = new SchedulingView(redis, keys, externalQueues);
  const activity = new ActivityRecorder(redis, keys, { flushMs: config.DASHBOARD_FLUSH_MS });
  const gateway = new GatewayState(redis, keys);
  const signals = new TaskSignals(store, externalQueues, {
    EVENT_MAX_BYTES: config.EVENT_MAX_BYTES ?? SIGNAL_DEFAULTS.EVENT_MAX_BYTES,
    EVENTS_MAX_KEPT: config.EVENTS_MAX_KEPT ?? SIGNAL_DEFAULTS.EVENTS_MAX_KEPT,
  });
  return {
    keys,
    store,
    sessions: new SessionStore(redis, keys, config.SESSION_IDLE_TTL_MS, {
      maxPerPrincipal: config.MAX_SESSIONS_PER_PRINCIPAL ?? 0,
      maxPerAddress: config.MAX_SESSIONS_PER_ADDRESS ?? 0,
    }),
    sessionCalls: new SessionCalls(redis, keys),
    signingKeys: new SigningKeys(redis, keys),
    events,
    subscriber,
    // A parked input request's answer wakes its task's job (docs/durable-execution.md, "Waiting for the client").
    inputs: new InputBroker(redis, keys, store, events, subscriber, (taskId, queue) => signals.wake(taskId, queue)),
    queue,
    externalQueues,
    tasks: tasksWith({}),
    signals,
    scheduling,
    schedulingView,
    webhooks,
    external: new ExternalTasks(redis, keys, store, events),
    catalog,
    arguments: new ArgumentValidator(schemas),
    gateway,
    admin: new TaskAdmin(store, queue, { queues: externalQueues, catalog, scheduling: schedulingView, gateway }),
    activity,
    tasksWith,
    close: async () => {
      await activity.close(); // bounded in time: a Redis that does not answer does not hold the shutdown
      await externalQueues.close();
      await queue.close();
      await schemas.close();
    },
  };
}

/** The variables of a group (its schema's keys) the process's configuration has (one present but undefined keeps the default). */
function definedOnly<T extends object>(config: Partial<T>, names: readonly string[]): Partial<T> {
  return Object.fromEntries(
    names
      .map((name) => [name, (config as Record<string, unknown>)[name]] as const)
      .filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}
