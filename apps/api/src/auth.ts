// Bearer-token authentication of /mcp: API keys (kept as SHA-256 digests, compared in constant time) and JWTs
// (HS256 shared secret or a JWKS URL, verified with jose). Every request of every method must carry a token when
// any of them is configured; without any, the api runs unauthenticated and tasks are bound to sessions.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { NextFunction, Request, Response } from 'express';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { ConfigError } from '@mcp-tasks/runtime';
import { ErrorCode } from '@mcp-tasks/protocol';
import { JWKS_DEFAULT_ALGORITHMS, type ApiConfig } from './config.ts';

export type AuthOutcome =
  { ok: true; principal: string } | { ok: false; reason: 'missing' | 'invalid'; detail: string };

export interface Authenticator {
  readonly enabled: boolean;
  /** What is accepted, for the start-up log (no secrets). */
  readonly methods: readonly string[];
  /** What the start-up log warns about: a setting that weakens a check. */
  readonly warnings: readonly string[];
  authenticate(authorization: string | undefined): Promise<AuthOutcome>;
  /**
   * Reads AUTH_API_KEYS_FILE again (SIGHUP), so keys are added and revoked without a restart; answers how many
   * keys the file holds. A file that cannot be read or parsed throws ConfigError and the keys stay as they were.
   */
  reloadKeyFile(): number;
}

/** The owner of a principal's sessions and tasks. */
export function principalOwner(principal: string): string {
  return `principal:${principal}`;
}

/**
 * Principals are namespaced by where they come from, so that a name in one source cannot claim another's tasks:
 * `key:<name>` for an API key, `jwt:<iss>|<sub>` for a JWT (`iss` empty when the token has none). OpenID Connect
 * makes `sub` unique only within its issuer, hence the issuer; it cannot contain `|`, so the first `|` ends it.
 */
export function apiKeyPrincipal(name: string): string {
  return `key:${name}`;
}

export function jwtPrincipal(issuer: string | undefined, subject: string): string {
  return `jwt:${issuer ?? ''}|${subject}`;
}

const PRINCIPAL = /^[A-Za-z0-9._@+-]{1,128}$/;
/** A `sub` may be any printable ASCII without spaces (e.g. `auth0|123`). */
const JWT_SUBJECT = /^[\x21-\x7e]{1,256}$/;
/** An `iss` likewise, without `|` (the separator in the principal). */
const JWT_ISSUER = /^[\x21-\x7b\x7d\x7e]{1,256}$/;
const MIN_API_KEY_LENGTH = 16;
const REALM = 'mcp-task-runner';
const CLOCK_TOLERANCE_S = 5;

interface KeyEntry {
  principal: string;
  digest: Buffer;
}

type SecurityConfig = Pick<
  ApiConfig,
  | 'AUTH_API_KEYS'
  | 'AUTH_API_KEYS_FILE'
  | 'AUTH_JWT_SECRET'
  | 'AUTH_JWKS_URL'
  | 'AUTH_JWT_ISSUER'
  | 'AUTH_JWT_AUDIENCE'
  | 'AUTH_JWT_ALGORITHMS'
  | 'AUTH_JWT_MAX_LIFETIME_MS'
> &
  Partial<Pick<ApiConfig, 'AUTH_JWT_AUDIENCE_OPTIONAL'>>;

export function createAuthenticator(config: SecurityConfig): Authenticator {
  const listed = keysFromList(config.AUTH_API_KEYS);
  let fromFile = keysFromFile(config.AUTH_API_KEYS_FILE);
  let keys = [...listed, ...fromFile];
  const jwt = jwtVerifier(config);
  const methods = [
    ...(keys.length > 0 ? [`${keys.length} API key(s)`] : []),
    // A key file, even empty, turns authentication on: emptying it to revoke every key must not open the api.
    ...(config.AUTH_API_KEYS_FILE !== undefined ? [`API keys in ${config.AUTH_API_KEYS_FILE} (SIGHUP reloads)`] : []),
    ...(jwt ? [jwt.description] : []),
  ];
  return {
    enabled: methods.length > 0,
    methods,
    warnings: jwt?.warning !== undefined ? [jwt.warning] : [],
    reloadKeyFile() {
      if (config.AUTH_API_KEYS_FILE === undefined) throw new ConfigError('AUTH_API_KEYS_FILE is not set');
      fromFile = keysFromFile(config.AUTH_API_KEYS_FILE);
      keys = [...listed, ...fromFile];
      return fromFile.length;
    },
    async authenticate(authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) {
        return { ok: false, reason: 'missing', detail: 'send Authorization: Bearer <token>' };
      }
      const fromKey = matchKey(keys, token);
      if (fromKey !== undefined) return { ok: true, principal: fromKey };
      if (jwt && token.split('.').length === 3) {
        try {
          return { ok: true, principal: await jwt.verify(token) };
        } catch (error) {
          return { ok: false, reason: 'invalid', detail: describeJwtError(error) };
        }
      }
      return { ok: false, reason: 'invalid', detail: 'the token is not valid' };
    },
  };
}

/**
 * The express middleware: with authentication on, answers 401 (with a JSON-RPC error body and a Bearer challenge)
 * unless the request carries a valid token, and leaves the principal in `res.locals.principal`.
 */
export function authGuard(auth: Authenticator, onFailure: (req: Request, outcome: AuthOutcome) => void) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!auth.enabled) {
      next();
      return;
    }
    auth.authenticate(req.headers.authorization).then((outcome) => {
      if (outcome.ok) {
        res.locals['principal'] = outcome.principal;
        next();
        return;
      }
      onFailure(req, outcome);
      const challenge =
        outcome.reason === 'missing'
          ? `Bearer realm="${REALM}"`
          : `Bearer realm="${REALM}", error="invalid_token", error_description="${outcome.detail.replace(/["\\]/g, '')}"`;
      res.locals['rpcErrorCode'] = ErrorCode.InvalidRequest;
      res
        .status(401)
        .set('WWW-Authenticate', challenge)
        .json({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: ErrorCode.InvalidRequest,
            message:
              outcome.reason === 'missing'
                ? 'Unauthorized: this server requires a bearer token (Authorization: Bearer <token>)'
                : `Unauthorized: invalid bearer token (${outcome.detail})`,
          },
        });
    }, next);
  };
}

function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header ?? '');
  return match?.[1];
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Compares the token's digest with every key's, without stopping early: the time does not depend on which matched. */
function matchKey(keys: readonly KeyEntry[], token: string): string | undefined {
  const digest = sha256(token);
  let principal: string | undefined;
  for (const key of keys) {
    if (timingSafeEqual(key.digest, digest)) principal = key.principal;
  }
  return principal === undefined ? undefined : apiKeyPrincipal(principal);
}

function keysFromList(value: string | undefined): KeyEntry[] {
  if (!value) return [];
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item, index) => {
      const colon = item.indexOf(':');
      const principal = item.slice(0, colon);
      const key = item.slice(colon + 1);
      // Entries are named by their position: a malformed one may be a bare key, or a key and name swapped.
      if (colon <= 0 || !PRINCIPAL.test(principal)) {
        throw new ConfigError(
          `Invalid configuration:\n  AUTH_API_KEYS (value hidden): entry ${index + 1} is not principal:key, the principal made of letters, digits and ._@+-`,
        );
      }
      if (key.length < MIN_API_KEY_LENGTH) {
        throw new ConfigError(
          `Invalid configuration:\n  AUTH_API_KEYS (value hidden): the key of entry ${index + 1} is shorter than ${MIN_API_KEY_LENGTH} characters (e.g. openssl rand -hex 24)`,
        );
      }
      return { principal, digest: sha256(key) };
    });
}

function keysFromFile(path: string | undefined): KeyEntry[] {
  if (!path) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  AUTH_API_KEYS_FILE=${path}: ${(error as Error).message}`);
  }
  return text.split(/\r?\n/).flatMap((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return [];
    const [principal, digest, ...rest] = line.split(/\s+/);
    if (!principal || !PRINCIPAL.test(principal) || !digest || !/^[0-9a-fA-F]{64}$/.test(digest) || rest.length > 0) {
      throw new ConfigError(
        `Invalid configuration:\n  AUTH_API_KEYS_FILE=${path}: line ${index + 1} must be '<principal> <sha256 hex of the key>' (printf %s "$KEY" | sha256sum)`,
      );
    }
    return [{ principal, digest: Buffer.from(digest, 'hex') }];
  });
}

interface JwtVerifier {
  /** For the start-up log. */
  description: string;
  /** A weakened check the start-up log warns about. */
  warning?: string;
  /** The token's principal; throws when the token is not accepted. */
  verify(token: string): Promise<string>;
}

function jwtVerifier(config: SecurityConfig): JwtVerifier | undefined {
  if (config.AUTH_JWT_SECRET && config.AUTH_JWKS_URL) {
    throw new ConfigError(
      'Invalid configuration:\n  AUTH_JWKS_URL: set either AUTH_JWT_SECRET (HS256) or AUTH_JWKS_URL, not both',
    );
  }
  if (config.AUTH_JWT_ALGORITHMS && !config.AUTH_JWKS_URL) {
    throw new ConfigError(
      'Invalid configuration:\n  AUTH_JWT_ALGORITHMS: applies to AUTH_JWKS_URL only (AUTH_JWT_SECRET tokens are HS256)',
    );
  }
  const jwt = config.AUTH_JWT_SECRET !== undefined || config.AUTH_JWKS_URL !== undefined;
  if (jwt && !config.AUTH_JWT_AUDIENCE && !config.AUTH_JWT_AUDIENCE_OPTIONAL) {
    throw new ConfigError(
      'Invalid configuration:\n  AUTH_JWT_AUDIENCE (unset): JWT authentication needs the audience of this server, the ' +
        'value its tokens carry in `aud` (e.g. https://mcp.example.com): without it a token the issuer minted for any ' +
        'other service would be accepted here (MCP authorization requires audience validation). Set it, or set ' +
        'AUTH_JWT_AUDIENCE_OPTIONAL=1 to accept any audience knowingly.',
    );
  }
  // `exp` is required: a token without one would be valid for ever.
  const options = {
    ...(config.AUTH_JWT_ISSUER ? { issuer: config.AUTH_JWT_ISSUER } : {}),
    ...(config.AUTH_JWT_AUDIENCE ? { audience: config.AUTH_JWT_AUDIENCE } : {}),
    requiredClaims: ['exp'],
    clockTolerance: CLOCK_TOLERANCE_S,
  };
  let verify: (token: string) => Promise<JWTPayload>;
  let description: string;
  if (config.AUTH_JWT_SECRET) {
    const secret = new TextEncoder().encode(config.AUTH_JWT_SECRET);
    verify = async (token) => (await jwtVerify(token, secret, { ...options, algorithms: ['HS256'] })).payload;
    description = 'JWT (HS256 secret)';
  } else if (config.AUTH_JWKS_URL) {
    const jwks = createRemoteJWKSet(new URL(config.AUTH_JWKS_URL));
    // Pinned: a JWKS key must not verify a token under an algorithm the operator did not choose.
    const algorithms = [...(config.AUTH_JWT_ALGORITHMS ?? JWKS_DEFAULT_ALGORITHMS)];
    verify = async (token) => (await jwtVerify(token, jwks, { ...options, algorithms })).payload;
    description = `JWT (JWKS ${config.AUTH_JWKS_URL}; ${algorithms.join(', ')})`;
  } else {
    return undefined;
  }
  const maxLifetimeS = config.AUTH_JWT_MAX_LIFETIME_MS / 1000;
  return {
    description: `${description}, lifetime at most ${maxLifetimeS} s`,
    ...(config.AUTH_JWT_AUDIENCE
      ? {}
      : {
          warning:
            'AUTH_JWT_AUDIENCE_OPTIONAL=1: JWTs are accepted whatever their audience (`aud`), so a token the issuer ' +
            'minted for any other service is accepted here too. Set AUTH_JWT_AUDIENCE to this server’s audience.',
        }),
    async verify(token) {
      const payload = await verify(token);
      // Counted from `iat`, or from now when it is absent or in the future, so a far `exp` never passes.
      const now = Date.now() / 1000;
      const start = typeof payload.iat === 'number' ? Math.min(payload.iat, now) : now;
      if ((payload.exp as number) - start > maxLifetimeS + CLOCK_TOLERANCE_S) {
        throw new Error(`the token lives longer than the ${maxLifetimeS} s this server accepts`);
      }
      if (typeof payload.sub !== 'string' || !JWT_SUBJECT.test(payload.sub)) {
        throw new Error('the token has no usable sub claim');
      }
      if (payload.iss !== undefined && !JWT_ISSUER.test(payload.iss)) {
        throw new Error('the token has no usable iss claim');
      }
      return jwtPrincipal(payload.iss, payload.sub);
    },
  };
}

function describeJwtError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_JWT_EXPIRED') return 'the token has expired';
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return `claim check failed: ${(error as Error).message}`;
  if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return 'the signature does not verify';
  if (typeof code === 'string' && code.startsWith('ERR_JWKS')) return 'no matching key in the JWKS';
  if (code === 'ERR_JOSE_ALG_NOT_ALLOWED') return 'the signing algorithm is not accepted';
  return error instanceof Error && !code ? error.message : 'the token is not valid';
}
