// The api's configuration, read once from the environment (documented in docs/configuration.md).
import {
  CallbackEnvSchema,
  CatalogEnvSchema,
  intFromEnv,
  LogEnvSchema,
  MetricsEnvSchema,
  parseEnv,
  RedisEnvSchema,
  SchedulingEnvSchema,
  SessionEnvSchema,
  PrincipalRateEnvSchema,
  SignalEnvSchema,
  TaskEnvSchema,
  WebhookEnvSchema,
} from '@mcp-tasks/engine';
import { z } from 'zod';

const DAY = 24 * 60 * 60_000;
/** At most 60 s between keep-alive comments: nginx's default read timeout would cut a quieter stream. */
const SSE_KEEPALIVE_MAX_MS = 60_000;

/** JWS algorithms AUTH_JWT_ALGORITHMS may list: signatures by a key pair, never `none` nor a shared secret. */
export const JWKS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** What a JWKS-signed token may use when AUTH_JWT_ALGORITHMS is unset: what identity providers sign with. */
export const JWKS_DEFAULT_ALGORITHMS: readonly (typeof JWKS_ALGORITHMS)[number][] = [
  'RS256',
  'PS256',
  'ES256',
  'EdDSA',
];

const flag = (defaultValue: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { message: "use 'true' or 'false'" })
    .default(defaultValue ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1');

/** Authentication, task binding, limits and rate limits (docs/configuration.md, "Security"). */
export const SecurityEnvSchema = z.object({
  /** `principal:key,...`: API keys given directly (kept only as SHA-256 digests in memory). */
  AUTH_API_KEYS: z.string().optional(),
  /** A file of `principal sha256hex` lines (`#` comments): API keys given by their digests. */
  AUTH_API_KEYS_FILE: z.string().optional(),
  /** HS256 shared secret for JWT bearer tokens; at least 32 bytes as RFC 7518 asks. */
  AUTH_JWT_SECRET: z.string().min(32, 'an HS256 secret needs at least 32 characters').optional(),
  /** JWKS document of the issuer whose JWTs are accepted (RS256, ES256, EdDSA, ...). */
  AUTH_JWKS_URL: z.string().url().optional(),
  AUTH_JWT_ISSUER: z.string().optional(),
  /** A JWT's `aud` must contain it; required with AUTH_JWT_SECRET or AUTH_JWKS_URL (see AUTH_JWT_AUDIENCE_OPTIONAL). */
  AUTH_JWT_AUDIENCE: z.string().optional(),
  /**
   * Accept JWTs without checking their audience: for an identity provider that sets no `aud`. Said at every start,
   * since a token its issuer minted for any other service is then accepted here too.
   */
  AUTH_JWT_AUDIENCE_OPTIONAL: flag(false),
  /** JWS algorithms accepted with AUTH_JWKS_URL; unset: JWKS_DEFAULT_ALGORITHMS. Asymmetric ones only. */
  AUTH_JWT_ALGORITHMS: z
    .string()
    .optional()
    .transform((value) =>
      value
        ?.split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    )
    .pipe(
      z
        .array(
          z.enum(JWKS_ALGORITHMS, {
            message: `list of ${JWKS_ALGORITHMS.join(', ')} (asymmetric only; HS256 is AUTH_JWT_SECRET's)`,
          }),
        )
        .min(1)
        .optional(),
    ),
  /** A JWT must carry `exp`, at most this long after its `iat` (or after now, without one). */
  AUTH_JWT_MAX_LIFETIME_MS: intFromEnv(DAY, { min: 1000 }),
  /** Declare and serve tasks/list; turn off where requestors cannot be told apart (T-SEC-2). */
  TASKS_LIST_ENABLED: flag(true),
  MAX_TASKS_PER_OWNER: intFromEnv(1000, { min: 1 }),
  /** The longest Idempotency-Key accepted, and how many keys one principal keeps (docs/durable-execution.md). */
  IDEMPOTENCY_KEY_MAX_LENGTH: intFromEnv(255, { min: 1, max: 1024 }),
  IDEMPOTENCY_KEYS_PER_PRINCIPAL: intFromEnv(1000, { min: 1, max: 1_000_000 }),
  MAX_ARGUMENTS_BYTES: intFromEnv(256 * 1024, { min: 2 }),
  MAX_STREAMS_PER_SESSION: intFromEnv(16, { min: 1, max: 10_000 }),
  RATE_LIMIT_PER_ADDRESS: intFromEnv(5000),
  RATE_LIMIT_FAILED_LOOKUPS: intFromEnv(100),
  RATE_LIMIT_FAILED_LOOKUPS_PER_ADDRESS: intFromEnv(500),
  /** Sessions held at once and `initialize` requests per window, per principal and per client address (0: none). */
  MAX_SESSIONS_PER_PRINCIPAL: intFromEnv(1000),
  MAX_SESSIONS_PER_ADDRESS: intFromEnv(1000),
  RATE_LIMIT_INITIALIZE_PER_PRINCIPAL: intFromEnv(100),
  RATE_LIMIT_INITIALIZE_PER_ADDRESS: intFromEnv(200),
  /** express `trust proxy`: which proxies' X-Forwarded-For names the client address (for per-address limits). */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((value) => {
      if (value === undefined || value === 'false') return false;
      if (value === 'true') return true;
      return /^\d+$/.test(value) ? Number(value) : value;
    }),
});

export const ApiEnvSchema = RedisEnvSchema.extend(LogEnvSchema.shape)
  .extend(SessionEnvSchema.shape)
  .extend(CatalogEnvSchema.shape)
  .extend(SchedulingEnvSchema.shape)
  .extend(TaskEnvSchema.shape)
  .extend(PrincipalRateEnvSchema.shape)
  .extend(SecurityEnvSchema.shape)
  .extend(CallbackEnvSchema.shape)
  .extend(MetricsEnvSchema.shape)
  // Accepts calls' webhooks and puts principals' configured ones on their tasks (docs/webhooks.md).
  .extend(WebhookEnvSchema.shape)
  // The bounds of events sent to tasks (docs/durable-execution.md, "Limits").
  .extend(SignalEnvSchema.shape)
  .extend({
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: intFromEnv(3000, { max: 65535 }),
    RESULT_STREAM_AFTER_MS: intFromEnv(250, { max: 60_000 }),
    /**
     * The keys that sign MRTR requestStates (docs/security.md, "Request states"): each signs this long, then verifies
     * the states it signed for the overlap more (keep the overlap at least 10 min, a state's lifetime, or states
     * signed near the end of a period live shorter); a replica re-reads a key it holds after the recheck time.
     */
    REQUEST_STATE_KEY_ROTATION_MS: intFromEnv(DAY, { min: 1000 }),
    REQUEST_STATE_KEY_OVERLAP_MS: intFromEnv(15 * 60_000, { max: DAY }),
    REQUEST_STATE_KEY_RECHECK_MS: intFromEnv(5000, { max: 60_000 }),
    /**
     * Task handles (docs/clients.md): a call of a client that did not negotiate Tasks still running after
     * HANDLE_AFTER_MS is answered with a handle, and such clients get the handle tools (named with the prefix).
     */
    TASK_HANDLES: z
      .enum(['on', 'off'], { message: "use 'on' or 'off'" })
      .default('on')
      .transform((value) => value === 'on'),
    HANDLE_AFTER_MS: intFromEnv(10_000, { max: 600_000 }),
    TASK_HANDLE_TOOL_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{0,32}$/, 'use at most 32 letters, digits, _, - or . (a tool name prefix)')
      .default('task_'),
    /**
     * While a call waits for its tool on an open request whose client sent a progress token, a progress notification
     * this often when the tool reported none, so that a client resetting its timeout on progress never times out
     * (0: none).
     */
    PROGRESS_KEEPALIVE_MS: intFromEnv(10_000, { max: 600_000 }),
    /** How often an SSE stream with nothing to send gets a `:` comment line (C26-SSE-2). */
    SSE_KEEPALIVE_MS: intFromEnv(15_000, { min: 100, max: SSE_KEEPALIVE_MAX_MS }),
    LIST_PAGE_SIZE: intFromEnv(50, { min: 1, max: 1000 }),
    MAX_BODY_BYTES: intFromEnv(1024 * 1024, { min: 1024 }),
    /** Enables /admin (dashboard, bull-board); unset: no admin routes at all. */
    ADMIN_TOKEN: z.string().min(16, 'use at least 16 characters (e.g. openssl rand -hex 24)').optional(),
    METRICS_LIVE_SCAN_LIMIT: intFromEnv(10_000, { max: 1_000_000 }),
    /** How old the live-status breakdown may be before a scrape starts a new pass over the records (0: every scrape). */
    METRICS_LIVE_REFRESH_MS: intFromEnv(30_000, { max: DAY }),
    /** How long a browser may reuse a CORS preflight answer of /mcp (Access-Control-Max-Age); browsers cap it lower. */
    CORS_MAX_AGE_SECONDS: intFromEnv(600, { max: 86_400 }),
    /** Browser origins allowed to call (DNS-rebinding protection); unset: loopback ones on a loopback bind, else none. */
    ALLOWED_ORIGINS: z
      .string()
      .default('')
      .transform((value, ctx) =>
        value
          .split(',')
          .map((entry) => entry.trim())
          .filter(Boolean)
          .map((entry) => {
            const origin = serializedOrigin(entry);
            if (origin === undefined) {
              ctx.addIssue({
                code: 'custom',
                message: `'${entry}' is not an origin: write scheme://host[:port], e.g. https://app.example.com`,
              });
            }
            return origin ?? entry;
          }),
      ),
  });

/** An ALLOWED_ORIGINS entry as browsers send it (`scheme://host[:port]`, lower case), or undefined if it is not one. */
function serializedOrigin(entry: string): string | undefined {
  try {
    const url = new URL(entry);
    const bare = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '';
    if (!bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

export type ApiConfig = Readonly<z.infer<typeof ApiEnvSchema>>;

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const config = parseEnv(ApiEnvSchema, env);
  if (config.TASK_TTL_DEFAULT_MS > config.TASK_TTL_MAX_MS) {
    throw new Error(
      `TASK_TTL_DEFAULT_MS (${config.TASK_TTL_DEFAULT_MS}) must not exceed TASK_TTL_MAX_MS (${config.TASK_TTL_MAX_MS})`,
    );
  }
  return config;
}
