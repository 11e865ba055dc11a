// The Origin rule of the DNS-rebinding guard (C26-SEC-1) and how ALLOWED_ORIGINS is read.
import { expect } from 'chai';
import { loadApiConfig } from '@mcp-tasks/api/config';
import { originAllowed, rebindingGuard } from '@mcp-tasks/api/http-guards';

describe('Origin allowlist', () => {
  const rule = (bindHost: string, allowedOrigins: string[] = []) => ({ bindHost, allowedOrigins });

  it('C26-SEC-1: a non-loopback bind without ALLOWED_ORIGINS accepts no Origin at all', () => {
    for (const origin of ['http://evil.example.com', 'http://localhost:3000', 'null', 'http://10.0.0.5:3000']) {
      expect(originAllowed(origin, rule('0.0.0.0')), origin).to.equal(false);
    }
  });

  it('C26-SEC-1: a loopback bind without a list accepts loopback origins only', () => {
    expect(originAllowed('http://localhost:5173', rule('127.0.0.1'))).to.equal(true);
    expect(originAllowed('http://[::1]:1', rule('127.0.0.1'))).to.equal(true);
    expect(originAllowed('http://localhost.evil.example.com', rule('127.0.0.1'))).to.equal(false);
  });

  it('C26-SEC-1: with a list, exactly the listed origins pass, whatever the bind', () => {
    const listed = rule('0.0.0.0', ['https://app.example.com']);
    expect(originAllowed('https://app.example.com', listed)).to.equal(true);
    expect(originAllowed('https://APP.example.com', listed)).to.equal(true);
    expect(originAllowed('http://app.example.com', listed)).to.equal(false);
    expect(originAllowed('http://localhost:3000', { ...listed, bindHost: '127.0.0.1' })).to.equal(false);
  });

  it('reads ALLOWED_ORIGINS as serialized origins and refuses entries that are not origins', () => {
    const config = loadApiConfig({ ALLOWED_ORIGINS: ' HTTPS://App.Example.com:443/ , http://localhost:3000' });
    expect(config.ALLOWED_ORIGINS).to.deep.equal(['https://app.example.com', 'http://localhost:3000']);
    expect(() => loadApiConfig({ ALLOWED_ORIGINS: 'https://app.example.com/path' })).to.throw(
      /ALLOWED_ORIGINS=.*'https:\/\/app\.example\.com\/path' is not an origin: write scheme:\/\/host\[:port\]/,
    );
    expect(() => loadApiConfig({ ALLOWED_ORIGINS: 'app.example.com' })).to.throw(/is not an origin/);
  });

  it('DNS rebinding: on a loopback bind the allowed Host kept from the last request lets no other Host pass, nor none', () => {
    const guard = rebindingGuard({ bindHost: '127.0.0.1', allowedOrigins: [] });
    const verdict = (host: string | undefined): number => {
      let status = 0;
      const res = {
        locals: {},
        headersSent: false,
        hasHeader: () => false,
        writeHead: (code: number) => {
          status = code;
        },
        end: () => undefined,
        req: { method: 'POST' },
      };
      guard({ headers: host === undefined ? {} : { host } } as never, res as never, () => {
        status = 200;
      });
      return status;
    };
    for (const host of [
      undefined,
      'localhost:3000',
      undefined,
      'localhost:3000',
      'evil.example.com',
      'LOCALHOST:3000',
      '',
      '[::1]',
    ]) {
      const allowed = host !== undefined && host !== '' && host !== 'evil.example.com';
      expect(verdict(host), String(host)).to.equal(allowed ? 200 : 403);
    }
  });
});
