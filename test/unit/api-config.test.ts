// The api's configuration bounds (apps/api/src/config.ts), for settings whose limits protect the service.
import { expect } from 'chai';
import { loadApiConfig } from '@mcp-tasks/api/config';

describe('api configuration', () => {
  it('C26-SSE-2: SSE_KEEPALIVE_MS defaults to 15 s and is bounded to 100 ms..60 s', () => {
    expect(loadApiConfig({}).SSE_KEEPALIVE_MS).to.equal(15_000);
    expect(loadApiConfig({ SSE_KEEPALIVE_MS: '250' }).SSE_KEEPALIVE_MS).to.equal(250);
    for (const value of ['50', '60001', 'soon']) {
      expect(() => loadApiConfig({ SSE_KEEPALIVE_MS: value }), value).to.throw(/SSE_KEEPALIVE_MS=/);
    }
  });
});
