// What the JWT settings accept (issue 14, item 11): only asymmetric algorithms for a JWKS, a bounded lifetime.
import { expect } from 'chai';
import { apiKeyPrincipal, createAuthenticator, jwtPrincipal } from '@mcp-tasks/api/auth';
import { JWKS_DEFAULT_ALGORITHMS, loadApiConfig } from '@mcp-tasks/api/config';

describe('JWT configuration', () => {
  const jwks = { AUTH_JWKS_URL: 'https://issuer.example.com/.well-known/jwks.json' };

  it('T-SEC-1: AUTH_JWT_ALGORITHMS takes asymmetric JWS algorithms only: never none, never HS*', () => {
    expect(loadApiConfig({ ...jwks, AUTH_JWT_ALGORITHMS: ' RS256 , EdDSA' }).AUTH_JWT_ALGORITHMS).to.deep.equal([
      'RS256',
      'EdDSA',
    ]);
    for (const value of ['none', 'HS256', 'RS256,none', 'rs256']) {
      expect(() => loadApiConfig({ ...jwks, AUTH_JWT_ALGORITHMS: value }), value).to.throw(
        /AUTH_JWT_ALGORITHMS=.*: list of RS256, .*EdDSA.* \(asymmetric only/,
      );
    }
    expect(JWKS_DEFAULT_ALGORITHMS).to.deep.equal(['RS256', 'PS256', 'ES256', 'EdDSA']);
    expect(loadApiConfig({}).AUTH_JWT_MAX_LIFETIME_MS).to.equal(86_400_000);
  });

  it('T-SEC-1: AUTH_JWT_ALGORITHMS without AUTH_JWKS_URL is a configuration error, not ignored', () => {
    const config = loadApiConfig({ AUTH_JWT_SECRET: 'x'.repeat(32), AUTH_JWT_ALGORITHMS: 'RS256' });
    expect(() => createAuthenticator(config)).to.throw(/AUTH_JWT_ALGORITHMS: applies to AUTH_JWKS_URL only/);
  });

  it('T-SEC-1: principals are namespaced by source: key:<name>, jwt:<iss>|<sub>', () => {
    expect(apiKeyPrincipal('alice')).to.equal('key:alice');
    expect(jwtPrincipal('https://issuer.test', 'alice')).to.equal('jwt:https://issuer.test|alice');
    expect(jwtPrincipal(undefined, 'auth0|123')).to.equal('jwt:|auth0|123');
    expect(jwtPrincipal('a', 'b|c')).to.not.equal(jwtPrincipal(undefined, 'a|b|c'));
  });
});
