// OpenTelemetry traces of a task's life (docs/observability.md): the api request, the queue wait, each attempt of
// the tool run, its input waits and the final transition, in one trace that crosses the api and worker processes.
// Spans are made through @opentelemetry/api; the SDK and the OTLP exporter are loaded only when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Unset, `tracer()` is undefined and
// every caller skips its tracing code with one comparison: nothing is parsed, carried or allocated.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';

/** The W3C trace context of a task, carried in its job data (`ToolJobData.trace`) from the api to the worker. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

export interface TracingHandle {
  /** Exports the spans still buffered, then stops the exporter (shutdown, after the work is closed). */
  shutdown(): Promise<void>;
}

export { SpanKind, SpanStatusCode, type Attributes, type Context, type Span };

const TRACER_NAME = 'mcp-task-runner';
/** The keys SEP-414 reserves in a request's `_meta` (both revisions; the 2026-07-28 one documents them). */
const META_KEYS = ['traceparent', 'tracestate'] as const;
/** A carrier value larger than this is ignored rather than stored with every job (W3C: tracestate <= 512 chars). */
const MAX_CARRIER_VALUE = 1024;

let active: { tracer: Tracer; propagator: TextMapPropagator; users: number; stop: () => Promise<void> } | undefined;

/** The tracer, or undefined when tracing is off: callers test it before doing any tracing work. */
export function tracer(): Tracer | undefined {
  return active?.tracer;
}

/** Whether the environment asks for traces: an OTLP endpoint is set and the SDK is not disabled. */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env['OTEL_SDK_DISABLED']?.toLowerCase() === 'true') return false;
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}

/**
 * Starts exporting spans over OTLP/HTTP (JSON) when the environment asks for it (`tracingRequested`); otherwise
 * loads nothing and answers undefined. Processes that share one Node process (`mcpt start`) share one provider; it
 * stops when the last of them shuts down. OTEL_SERVICE_NAME overrides `service` (the resource's service.name);
 * OTEL_BSP_SCHEDULE_DELAY sets how long spans are batched (ms, default 5000).
 */
export async function startTracing(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TracingHandle | undefined> {
  if (!tracingRequested(env)) return undefined;
  if (!active) {
    const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, core] =
      await Promise.all([
        import('@opentelemetry/sdk-trace'),
        import('@opentelemetry/exporter-trace-otlp-http'),
        import('@opentelemetry/resources'),
        import('@opentelemetry/core'),
      ]);
    const delay = Number(env['OTEL_BSP_SCHEDULE_DELAY']);
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': env['OTEL_SERVICE_NAME'] || service }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter(),
          ...(Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
        }),
      ],
    });
    trace.setGlobalTracerProvider(provider);
    active = {
      tracer: provider.getTracer(TRACER_NAME),
      propagator: new core.W3CTraceContextPropagator(),
      users: 0,
      stop: () => provider.shutdown(),
    };
  }
  const started = active;
  started.users += 1;
  let stopped = false;
  return {
    async shutdown() {
      if (stopped) return;
      stopped = true;
      started.users -= 1;
      if (started.users > 0) return;
      if (active === started) active = undefined;
      trace.disable();
      await started.stop();
    },
  };
}

/**
 * The parent context a client sent: the SEP-414 keys of the request's `_meta` win over the HTTP `traceparent` /
 * `tracestate` headers (the `_meta` is the message's own, the headers may be a proxy's). Invalid values are ignored
 * (the W3C rule): an invalid `_meta` context leaves the headers', and without a valid one the span starts a trace
 * of its own.
 */
export function clientContext(
  meta: Record<string, unknown> | undefined,
  headers: Record<string, string | string[] | undefined>,
): Context {
  const fromMeta = meta ? contextOf(carrierOf(meta)) : ROOT_CONTEXT;
  return trace.getSpanContext(fromMeta) ? fromMeta : contextOf(carrierOf(headers));
}

/** The context a job carries (ROOT_CONTEXT for none: a job queued while tracing was off, or by another producer). */
export function contextOf(carrier: TraceCarrier | Record<string, string> | undefined): Context {
  if (!active || !carrier) return ROOT_CONTEXT;
  return active.propagator.extract(ROOT_CONTEXT, carrier, {
    keys: (c) => Object.keys(c as object),
    get: (c, key) => {
      const value = (c as Record<string, unknown>)[key];
      return typeof value === 'string' && value.length <= MAX_CARRIER_VALUE ? value : undefined;
    },
  });
}

/** The carrier of a context, to put into a job; undefined when tracing is off or the context has no span. */
export function carrierFor(context: Context | undefined): TraceCarrier | undefined {
  if (!active || !context || !trace.getSpanContext(context)) return undefined;
  const carrier: Record<string, string> = {};
  active.propagator.inject(context, carrier, {
    set: (c, key, value) => {
      (c as Record<string, string>)[key] = value;
    },
  });
  const { traceparent, tracestate } = carrier;
  if (!traceparent) return undefined;
  return { traceparent, ...(tracestate ? { tracestate } : {}) };
}

/**
 * A link to the span a carrier names (the request that created a task: the task's trace), for a span that lives in
 * another trace; undefined while tracing is off or without a valid carrier.
 */
export function linkTo(carrier: TraceCarrier | undefined): Link | undefined {
  const context = trace.getSpanContext(contextOf(carrier));
  return context ? { context } : undefined;
}

/** A context whose parent is `span` (children of the span are started in it). */
export function withSpan(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

/** Ends `span` with an error status for `error` (its message; the exception as an event). */
export function endWithError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.end();
}

function carrierOf(source: Record<string, unknown>): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  for (const key of META_KEYS) {
    const raw = source[key];
    const value: unknown = Array.isArray(raw) ? (raw as unknown[])[0] : raw;
    if (typeof value === 'string' && value.length <= MAX_CARRIER_VALUE) carrier[key] = value;
  }
  return carrier['traceparent'] ? carrier : undefined;
}
