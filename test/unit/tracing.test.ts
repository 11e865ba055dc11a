// Tracing's switch and the trace context a client sends (docs/observability.md): off without an OTLP endpoint;
// on, the SEP-414 `_meta` keys win over the HTTP headers and invalid values are ignored. Nothing is exported here:
// no span is started, and the exporter's endpoint is a closed port.
import { expect } from 'chai';
import {
  carrierFor,
  clientContext,
  startTracing,
  tracer,
  tracingRequested,
  type TracingHandle,
} from '@mcp-tasks/runtime';

const META_PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const HEADER_PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('tracing switch and client trace context', () => {
  it('is requested only with an OTLP endpoint, and not when OTEL_SDK_DISABLED=true', () => {
    expect(tracingRequested({})).to.equal(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).to.equal(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).to.equal(true);
    expect(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }),
    ).to.equal(false);
  });

  it('off: nothing starts, there is no tracer, and no context is carried', async () => {
    expect(await startTracing('test', {})).to.equal(undefined);
    expect(tracer()).to.equal(undefined);
    expect(carrierFor(clientContext({ traceparent: META_PARENT }, {}))).to.equal(undefined);
  });

  describe('on', () => {
    let handle: TracingHandle | undefined;
    before(async () => {
      handle = await startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    });
    after(async () => {
      await handle?.shutdown();
      expect(tracer()).to.equal(undefined);
    });

    it('SEP-414: the _meta traceparent/tracestate win over the headers', () => {
      const context = clientContext(
        { traceparent: META_PARENT, tracestate: 'a=1' },
        { traceparent: HEADER_PARENT, tracestate: 'b=2' },
      );
      expect(carrierFor(context)).to.deep.equal({ traceparent: META_PARENT, tracestate: 'a=1' });
    });

    it('W3C: an invalid _meta context falls back to the headers; invalid everywhere starts no parent', () => {
      expect(carrierFor(clientContext({ traceparent: 'garbage' }, { traceparent: HEADER_PARENT }))).to.deep.equal({
        traceparent: HEADER_PARENT,
      });
      const allZero = '00-00000000000000000000000000000000-0000000000000000-01';
      expect(carrierFor(clientContext({ traceparent: allZero }, { traceparent: 'nope' }))).to.equal(undefined);
      expect(carrierFor(clientContext(undefined, {}))).to.equal(undefined);
    });
  });
});
