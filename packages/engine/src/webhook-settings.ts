// The webhook settings (docs/webhooks.md), read by api replicas (which accept a call's webhook and put a principal's
// configured one on its tasks) and workers (which sign and deliver): the deployment's signing secret, the per-principal
// webhooks and secrets (WEBHOOKS_BY_PRINCIPAL inline, WEBHOOKS_FILE a file: the inline entry wins), the targets allowed
// beyond public addresses, and the bounds of delivery.
import { readFileSync } from 'node:fs';
import {
  checkWebhookUrl,
  describeIssues,
  InvalidInputError,
  WebhookEvents,
  type WebhookTarget,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { ConfigError, intFromEnv } from './config.ts';
import { OutboundTargets } from './outbound-targets.ts';
import { parseWebhookSecrets } from './webhook-signing.ts';

export const WebhookEnvSchema = z.object({
  /** The deployment's signing secret(s), `whsec_<base64>` (several, space-separated, while rotating); unset: none. */
  WEBHOOK_SECRET: z
    .string()
    .superRefine((value, ctx) => {
      try {
        parseWebhookSecrets(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    })
    .optional(),
  /** Inline JSON: principal -> {url?, events?, secret?} (WebhooksFileSchema). */
  WEBHOOKS_BY_PRINCIPAL: z.string().optional(),
  /** A JSON file of the same shape. */
  WEBHOOKS_FILE: z.string().optional(),
  /** Hosts, host:port pairs, addresses and CIDR ranges webhooks may reach beyond public addresses. */
  WEBHOOK_ALLOWED_TARGETS: z.string().default(''),
  /** One attempt's time for the whole exchange (connection, request, answer). */
  WEBHOOK_TIMEOUT_MS: intFromEnv(10_000, { min: 100, max: 120_000 }),
  /** The first retry's wait; each next one doubles, up to WEBHOOK_BACKOFF_MAX_MS (plus up to a fifth, at random). */
  WEBHOOK_BACKOFF_MS: intFromEnv(1000, { min: 10, max: 3_600_000 }),
  WEBHOOK_BACKOFF_MAX_MS: intFromEnv(300_000, { min: 10, max: 24 * 3_600_000 }),
  /** A delivery is given up this long after its first attempt (and at the task's expiry, whichever comes first). */
  WEBHOOK_RETRY_FOR_MS: intFromEnv(3_600_000, { min: 0, max: 7 * 24 * 3_600_000 }),
  /** ... or after this many attempts. */
  WEBHOOK_MAX_ATTEMPTS: intFromEnv(25, { min: 1, max: 10_000 }),
  /** The most deliveries a task's outbox holds (events "all"; a terminal one always gets in). */
  WEBHOOK_MAX_PENDING: intFromEnv(100, { min: 1, max: 10_000 }),
  /** The largest body sent: past it the task is sent without its result (`resultOmitted` in its `_meta`). */
  WEBHOOK_MAX_BODY_BYTES: intFromEnv(1024 * 1024, { min: 1024, max: 64 * 1024 * 1024 }),
  /** Deliveries one worker makes at once. */
  WEBHOOK_CONCURRENCY: intFromEnv(16, { min: 1, max: 1000 }),
  /** How often an idle delivery loop looks for due deliveries without being woken (a lost wake-up, a retry's time). */
  WEBHOOK_POLL_MS: intFromEnv(1000, { min: 20, max: 60_000 }),
  /** The most attempts kept per task for operators. */
  WEBHOOK_LOG_MAX: intFromEnv(50, { min: 1, max: 1000 }),
});
export type WebhookEnv = z.infer<typeof WebhookEnvSchema>;

const PrincipalWebhookSchema = z.strictObject({
  url: z.string().optional(),
  events: z.enum([WebhookEvents.Terminal, WebhookEvents.All]).optional(),
  secret: z.string().optional(),
});
export const WebhooksFileSchema = z.record(z.string(), PrincipalWebhookSchema);

/** What delivering needs of the settings. */
export interface DeliveryBounds {
  timeoutMs: number;
  backoffMs: number;
  backoffMaxMs: number;
  retryForMs: number;
  maxAttempts: number;
  maxBodyBytes: number;
  concurrency: number;
  pollMs: number;
  logMax: number;
}

/** A principal's entry, compiled: its webhook (when it names a URL) and its own signing keys. */
interface PrincipalWebhook {
  target?: WebhookTarget;
  keys?: Buffer[];
}

export class WebhookSettings {
  constructor(
    readonly targets: OutboundTargets,
    readonly bounds: DeliveryBounds,
    readonly maxPending: number,
    readonly deploymentKeys: Buffer[] | undefined,
    readonly principals: ReadonlyMap<string, PrincipalWebhook>,
  ) {}

  /** Settings with nothing configured (no secret: no webhook is accepted). */
  static none(): WebhookSettings {
    return loadWebhookSettings(WebhookEnvSchema.parse({}));
  }

  /** Whether any delivery can be signed: a deployment secret, or a principal's own. */
  get enabled(): boolean {
    return this.deploymentKeys !== undefined || [...this.principals.values()].some((entry) => entry.keys);
  }

  /** The keys that sign `owner`'s deliveries: its own secret's, else the deployment's; undefined: none. */
  keysFor(owner: string): Buffer[] | undefined {
    return this.principals.get(owner)?.keys ?? this.deploymentKeys;
  }

  /** The webhook an operator configured for `owner`'s tasks, if any. */
  configuredFor(owner: string): WebhookTarget | undefined {
    return this.principals.get(owner)?.target;
  }
}

export function loadWebhookSettings(env: WebhookEnv, readFile = readFileText): WebhookSettings {
  const fromFile = env.WEBHOOKS_FILE !== undefined ? parse('WEBHOOKS_FILE', readFile(env.WEBHOOKS_FILE)) : {};
  const inline =
    env.WEBHOOKS_BY_PRINCIPAL !== undefined ? parse('WEBHOOKS_BY_PRINCIPAL', env.WEBHOOKS_BY_PRINCIPAL) : {};
  const principals = new Map<string, PrincipalWebhook>();
  for (const [variable, entries] of [
    ['WEBHOOKS_FILE', fromFile],
    ['WEBHOOKS_BY_PRINCIPAL', inline],
  ] as const) {
    for (const [principal, entry] of Object.entries(entries))
      principals.set(principal, compile(variable, principal, entry));
  }
  return new WebhookSettings(
    OutboundTargets.parse(env.WEBHOOK_ALLOWED_TARGETS),
    {
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      backoffMs: env.WEBHOOK_BACKOFF_MS,
      backoffMaxMs: Math.max(env.WEBHOOK_BACKOFF_MS, env.WEBHOOK_BACKOFF_MAX_MS),
      retryForMs: env.WEBHOOK_RETRY_FOR_MS,
      maxAttempts: env.WEBHOOK_MAX_ATTEMPTS,
      maxBodyBytes: env.WEBHOOK_MAX_BODY_BYTES,
      concurrency: env.WEBHOOK_CONCURRENCY,
      pollMs: env.WEBHOOK_POLL_MS,
      logMax: env.WEBHOOK_LOG_MAX,
    },
    env.WEBHOOK_MAX_PENDING,
    env.WEBHOOK_SECRET !== undefined ? parseWebhookSecrets(env.WEBHOOK_SECRET) : undefined,
    principals,
  );
}

function compile(variable: string, principal: string, entry: z.infer<typeof PrincipalWebhookSchema>): PrincipalWebhook {
  const where = `${variable}[${JSON.stringify(principal)}]`;
  const compiled: PrincipalWebhook = {};
  if (entry.url !== undefined) {
    try {
      compiled.target = {
        url: checkWebhookUrl(entry.url, `${where}.url`),
        events: entry.events ?? WebhookEvents.Terminal,
      };
    } catch (error) {
      if (error instanceof InvalidInputError) throw new ConfigError(error.message);
      throw error;
    }
  }
  if (entry.secret !== undefined) {
    try {
      compiled.keys = parseWebhookSecrets(entry.secret);
    } catch (error) {
      throw new ConfigError(`${where}.secret: ${(error as Error).message}`);
    }
  }
  return compiled;
}

function readFileText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`WEBHOOKS_FILE=${JSON.stringify(path)}: cannot read it (${(error as Error).message})`);
  }
}

function parse(variable: string, text: string): z.infer<typeof WebhooksFileSchema> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // Node's message quotes the text, which may hold secrets: only where it stopped.
    const at = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new ConfigError(`${variable}: not JSON${at !== undefined ? ` (at character ${at})` : ''}`);
  }
  const parsed = WebhooksFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      `${variable}: ${describeIssues(parsed.error)}; expected {"principal:key:<name>": {"url": "https://...", ` +
        '"events": "terminal" | "all", "secret": "whsec_..."}} (each field optional)',
    );
  }
  const bare = Object.keys(parsed.data).find((principal) => !/^principal:./.test(principal));
  if (bare !== undefined) {
    throw new ConfigError(
      `${variable}: ${JSON.stringify(bare)}: name a principal as tasks' owners do (mcpt list): ` +
        'principal:key:<name> or principal:jwt:<issuer>|<subject>; webhooks need an authenticated principal',
    );
  }
  return parsed.data;
}
