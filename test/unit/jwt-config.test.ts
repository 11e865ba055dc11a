// What the JWT settings accept (issue 14, item 11): only asymmetric algorithms for a JWKS, a bounded lifetime.
import { expect } from 'chai';
import { SignJWT } from 'jose';
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
    const config = loadApiConfig({
      AUTH_JWT_SECRET: 'x'.repeat(32),
      AUTH_JWT_ALGORITHMS: 'RS256',
      AUTH_JWT_AUDIENCE: 'mcp',
    });
    expect(() => createAuthenticator(config)).to.throw(/AUTH_JWT_ALGORITHMS: applies to AUTH_JWKS_URL only/);
  });

  it('edges: AUTH_JWT_SECRET or AUTH_JWKS_URL without AUTH_JWT_AUDIENCE is a configuration error saying why', () => {
    for (const jwt of [{ AUTH_JWT_SECRET: 'x'.repeat(32) }, jwks]) {
      expect(() => createAuthenticator(loadApiConfig(jwt)), Object.keys(jwt)[0]).to.throw(
        /AUTH_JWT_AUDIENCE \(unset\): JWT authentication needs the audience .* audience validation\)\. Set it, or set AUTH_JWT_AUDIENCE_OPTIONAL=1/,
      );
      const audience = createAuthenticator(loadApiConfig({ ...jwt, AUTH_JWT_AUDIENCE: 'https://mcp.example.com' }));
      expect(audience.warnings).to.deep.equal([]);
    }
    // API keys alone need no audience.
    expect(createAuthenticator(loadApiConfig({ AUTH_API_KEYS: 'a:0123456789abcdef' })).warnings).to.deep.equal([]);
  });

  it('edges: AUTH_JWT_AUDIENCE_OPTIONAL=1 accepts a token of any audience, and says so at start', async () => {
    const secret = 'y'.repeat(32);
    const auth = createAuthenticator(loadApiConfig({ AUTH_JWT_SECRET: secret, AUTH_JWT_AUDIENCE_OPTIONAL: '1' }));
    expect(auth.warnings).to.have.length(1);
    expect(auth.warnings[0]).to.match(/^AUTH_JWT_AUDIENCE_OPTIONAL=1: JWTs are accepted whatever their audience/);
    const token = await new SignJWT({ sub: 'someone' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setAudience('another-service')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    expect(await auth.authenticate(`Bearer ${token}`)).to.deep.equal({ ok: true, principal: 'jwt:|someone' });
  });

  it('T-SEC-1: principals are namespaced by source: key:<name>, jwt:<iss>|<sub>', () => {
    expect(apiKeyPrincipal('alice')).to.equal('key:alice');
    expect(jwtPrincipal('https://issuer.test', 'alice')).to.equal('jwt:https://issuer.test|alice');
    expect(jwtPrincipal(undefined, 'auth0|123')).to.equal('jwt:|auth0|123');
    expect(jwtPrincipal('a', 'b|c')).to.not.equal(jwtPrincipal(undefined, 'a|b|c'));
  });
});
