/**
 * @mcp-tasks/runtime — the process plumbing every app shares and that touches no Redis: structured logs with
 * redaction, tracing, environment parsing, shutdown on signals, opening a listener, and who may read /metrics. The
 * engine builds on it (it sits below the engine, beside @mcp-tasks/protocol); this list is the whole surface,
 * pinned by test/unit/public-surface.test.ts.
 *
 * @example
 * const logger = createLogger({ service: 'api', level: 'info' });
 * stopOnShutdownSignal(startApi(config, logger), (api) => api.close());
 */
export { CleanupStack, onShutdownSignal, stopOnShutdownSignal } from './cleanup.ts';
export { ConfigError, type EnvProblem, type EnvRule, intFromEnv, parseEnvWith } from './config.ts';
export { listenOn, type ListenTarget } from './listen.ts';
export { createLogger, type Logger } from './logger.ts';
export {
  hostAllowed,
  hostRefusal,
  isLoopbackHost,
  METRICS_CHALLENGE,
  metricsAccess,
  metricsAccessAllowed,
  type MetricsGate,
  metricsWarning,
} from './metrics-access.ts';
export {
  isSecretVariable,
  isSessionOwnerLabel,
  maskUrlPasswords,
  ownerLabel,
  redactSessionFields,
  sessionDigest,
} from './redact.ts';
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
