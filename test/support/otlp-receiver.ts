// A local OTLP/HTTP trace receiver for tests: accepts POST /v1/traces in OTLP JSON (what our exporter sends) and
// keeps every span with its service name, on 127.0.0.1.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { track } from './resources.ts';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** The W3C tracestate of the span's context ('' when none). */
  traceState: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  /** The spans this one links to (in other traces, or its own). */
  links: { traceId: string; spanId: string }[];
}

export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Content types of the export requests received (the exporter's encoding). */
  contentTypes: string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        traceState?: string;
        name: string;
        kind: number;
        startTimeUnixNano: string;
        endTimeUnixNano: string;
        attributes?: OtlpAttribute[];
        status?: { code?: number; message?: string };
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(String(req.headers['content-type']));
      try {
        collect(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport, spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (error) {
        res.writeHead(400).end(String(error));
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const release = track('otlp receiver', () => new Promise<void>((resolve) => server.close(() => resolve())));
  return { endpoint: `http://127.0.0.1:${port}`, spans, contentTypes, close: release };
}

function collect(body: OtlpExport, into: ReceivedSpan[]): void {
  for (const resourceSpans of body.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        into.push({
          service: String(resource['service.name']),
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          traceState: span.traceState ?? '',
          name: span.name,
          kind: span.kind,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          status: span.status ?? {},
          links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
        });
      }
    }
  }
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.boolValue ??
      value.doubleValue;
  }
  return out;
}
