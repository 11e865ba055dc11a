// Which existing MCP servers a worker fronts (docs/gateway.md): one from UPSTREAM_MCP_COMMAND or UPSTREAM_MCP_URL,
// or several from the JSON file MCPT_UPSTREAMS names. Read once at start-up; a mistake names the variable or file.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '@mcp-tasks/engine';
import { TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

/** A `*` matches any run of characters; everything else is literal. */
const ToolPattern = z.string().min(1).max(200);

/** What an upstream may make us keep or relay (docs/gateway.md, "Bounds"), unless its configuration says otherwise. */
export const DEFAULT_MAX_TEXT_BYTES = 1024;
export const DEFAULT_MAX_REQUEST_BYTES = 64 * 1024;

/** Whose calls may share one upstream session (docs/gateway.md, "Affinity"). */
export const AFFINITIES = ['stateless', 'per-principal', 'per-client-session'] as const;
export type Affinity = (typeof AFFINITIES)[number];

const UpstreamSchema = z
  .strictObject({
    /** Names the upstream in logs, metrics and status messages. */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'use 1-64 of A-Z a-z 0-9 _ . -')
      .default('upstream'),
    /** stdio: the program to start, and its arguments. */
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** stdio: variables added to the small default environment the SDK gives the child (PATH, HOME, ...). */
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    /** Streamable HTTP: the endpoint, and headers sent with every request (values may name `${VARIABLES}`). */
    url: z.url({ protocol: /^https?$/ }).optional(),
    headers: z.record(z.string(), z.string()).default({}),
    /** Put in front of every tool name of this upstream in our tools/list, e.g. `fs_`. */
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{0,64}$/, 'use up to 64 of A-Z a-z 0-9 _ . -')
      .default(''),
    /** taskSupport by upstream tool name; tools not named here are `optional`. */
    taskSupport: z
      .record(z.string(), z.enum([TaskSupport.Forbidden, TaskSupport.Optional, TaskSupport.Required]))
      .default({}),
    /** Upstream tool names (or `*` patterns) to publish; unset: all. */
    allow: z.array(ToolPattern).optional(),
    /** Upstream tool names (or `*` patterns) never published; wins over `allow`. */
    deny: z.array(ToolPattern).default([]),
    /**
     * The most tools of this upstream published, the first by name (after `allow` and `deny`): an upstream that lists
     * thousands loses its own excess and crowds no other publisher out of the catalog (docs/gateway.md).
     */
    maxTools: z.int().min(1).max(100_000).default(200),
    /**
     * Calls to this upstream in flight at once in one worker process. They share its connections (docs/gateway.md,
     * "Connections"): a stdio upstream runs one process per worker, or one per principal or client session.
     */
    concurrency: z.int().min(1).max(256).default(4),
    /**
     * Whose calls share an upstream session: `stateless` (anyone's), `per-principal`, `per-client-session`; the
     * latter two keep a session to itself across workers (docs/gateway.md, "Affinity").
     */
    affinity: z.enum(AFFINITIES).default('stateless'),
    /**
     * Whether a call that may have started upstream is sent again after the connection broke during it (or after
     * our worker died): unset, the tools the upstream annotates `readOnlyHint` or `idempotentHint`; `false`, none;
     * `true`, all; a list of names and `*` patterns, those and the annotated ones. A call that never reached the
     * upstream is sent again once whatever this says.
     */
    retrySafe: z.union([z.boolean(), z.array(ToolPattern)]).optional(),
    /** How long one call may take before its task fails (the upstream is told to cancel it). */
    timeoutMs: z
      .int()
      .min(100)
      .max(7 * 24 * 3_600_000)
      .default(30 * 60_000),
    /** How long starting (stdio) or reaching (HTTP) the upstream and its `initialize` may take. */
    connectTimeoutMs: z.int().min(100).max(600_000).default(10_000),
    /**
     * A connection without calls for this long is closed (a stdio child stopped); the next call opens one. With an
     * affinity, a principal's or client session's upstream session is forgotten after this long unused.
     */
    idleMs: z
      .int()
      .min(100)
      .max(7 * 24 * 3_600_000)
      .default(5 * 60_000),
    /**
     * A stateful stdio upstream's calls run on one worker at a time, which holds a lease in Redis renewed at a third
     * of this; another worker takes over this long after the holder stopped renewing.
     */
    ownerLeaseMs: z.int().min(300).max(600_000).default(15_000),
    /**
     * The most bytes of the upstream's texts that are kept or shown: its progress messages, its failure reasons, its
     * tasks' status messages and its log messages' data are cut to this (docs/gateway.md, "Bounds").
     */
    maxTextBytes: z
      .int()
      .min(64)
      .max(1024 * 1024)
      .default(DEFAULT_MAX_TEXT_BYTES),
    /**
     * The most bytes of JSON an upstream's elicitation/create or sampling/createMessage may carry: a larger one is
     * refused to the upstream, never relayed to the client (docs/gateway.md, "Bounds").
     */
    maxRequestBytes: z
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(DEFAULT_MAX_REQUEST_BYTES),
  })
  .refine((upstream) => (upstream.command === undefined) !== (upstream.url === undefined), {
    message: 'give exactly one of `command` (stdio) or `url` (Streamable HTTP)',
  });

export type UpstreamConfig = Readonly<z.infer<typeof UpstreamSchema>>;
/** An upstream as a user writes it (a file entry, or `startWorker({ upstreams })`): defaults not yet applied. */
export type UpstreamOptions = z.input<typeof UpstreamSchema>;

const FileSchema = z.union([
  z.array(z.unknown()),
  z.strictObject({ upstreams: z.array(z.unknown()) }).transform((file) => file.upstreams),
]);

/**
 * The upstreams of this worker: MCPT_UPSTREAMS (a JSON file), plus one from UPSTREAM_MCP_COMMAND or
 * UPSTREAM_MCP_URL. Empty when none is configured.
 */
export function loadUpstreams(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): UpstreamConfig[] {
  const upstreams: UpstreamConfig[] = [];
  const file = env['MCPT_UPSTREAMS'];
  if (file) upstreams.push(...readUpstreamFile(resolve(cwd, file), env));
  const single = upstreamFromEnv(env);
  if (single) upstreams.push(single);
  const names = new Set<string>();
  for (const upstream of upstreams) {
    if (names.has(upstream.name)) {
      throw new ConfigError(`Upstream name '${upstream.name}' is used twice: give each upstream its own \`name\``);
    }
    names.add(upstream.name);
  }
  return upstreams;
}

function readUpstreamFile(path: string, env: NodeJS.ProcessEnv): UpstreamConfig[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`MCPT_UPSTREAMS: cannot read ${path}: ${(error as Error).message}`);
  }
  const list = FileSchema.safeParse(raw);
  if (!list.success) {
    throw new ConfigError(`MCPT_UPSTREAMS: ${path} must hold an array of upstreams or { "upstreams": [...] }`);
  }
  return parseUpstreams(list.data, env, `MCPT_UPSTREAMS ${path}, `);
}

/** Upstreams given in code or read from a file: checked, defaults applied, `${VARIABLES}` read from `env`. */
export function parseUpstreams(
  list: readonly unknown[],
  env: NodeJS.ProcessEnv = process.env,
  where = '',
): UpstreamConfig[] {
  return list.map((entry, index) => parseUpstream(entry, env, `${where}upstreams[${index}]`));
}

function upstreamFromEnv(env: NodeJS.ProcessEnv): UpstreamConfig | undefined {
  const value = (name: string) => (env[name] === '' ? undefined : env[name]);
  const command = value('UPSTREAM_MCP_COMMAND');
  const url = value('UPSTREAM_MCP_URL');
  if (command === undefined && url === undefined) return undefined;
  const words = command === undefined ? undefined : splitCommand(command);
  const headers = value('UPSTREAM_MCP_HEADERS');
  let parsedHeaders: unknown;
  try {
    parsedHeaders = headers === undefined ? undefined : JSON.parse(headers);
  } catch {
    throw new ConfigError('UPSTREAM_MCP_HEADERS must be a JSON object, e.g. {"Authorization":"Bearer ${API_TOKEN}"}');
  }
  const number = (name: string) => (value(name) === undefined ? undefined : Number(value(name)));
  const flag = value('UPSTREAM_MCP_RETRY_SAFE');
  return parseUpstream(
    {
      name: value('UPSTREAM_MCP_NAME'),
      ...(words ? { command: words[0], args: words.slice(1) } : {}),
      url,
      headers: parsedHeaders,
      prefix: value('UPSTREAM_MCP_PREFIX'),
      concurrency: number('UPSTREAM_MCP_CONCURRENCY'),
      affinity: value('UPSTREAM_MCP_AFFINITY'),
      timeoutMs: number('UPSTREAM_MCP_TIMEOUT_MS'),
      connectTimeoutMs: number('UPSTREAM_MCP_CONNECT_TIMEOUT_MS'),
      idleMs: number('UPSTREAM_MCP_IDLE_MS'),
      maxTextBytes: number('UPSTREAM_MCP_MAX_TEXT_BYTES'),
      maxRequestBytes: number('UPSTREAM_MCP_MAX_REQUEST_BYTES'),
      maxTools: number('UPSTREAM_MCP_MAX_TOOLS'),
      retrySafe: flag === undefined ? undefined : flag === 'true' || flag === '1',
    },
    env,
    'UPSTREAM_MCP_*',
  );
}

function parseUpstream(raw: unknown, env: NodeJS.ProcessEnv, where: string): UpstreamConfig {
  const parsed = UpstreamSchema.safeParse(dropUndefined(raw));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(upstream)'}: ${issue.message}`);
    throw new ConfigError(`${where}: ${problems.join('; ')}`);
  }
  const upstream = parsed.data;
  const expand = (text: string, field: string) =>
    text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) throw new ConfigError(`${where}: ${field} names \${${name}}, which is not set`);
      return found;
    });
  return Object.freeze({
    ...upstream,
    headers: Object.fromEntries(Object.entries(upstream.headers).map(([k, v]) => [k, expand(v, `headers.${k}`)])),
    env: Object.fromEntries(Object.entries(upstream.env).map(([k, v]) => [k, expand(v, `env.${k}`)])),
  });
}

function dropUndefined(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  return Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== undefined));
}

/** A command line split into words the way a POSIX shell would for plain words and quotes (no expansions). */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (quote) {
      if (char === quote) quote = undefined;
      else if (char === '\\' && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (char === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) throw new ConfigError(`UPSTREAM_MCP_COMMAND has an unclosed ${quote}`);
  if (inWord) words.push(word);
  if (words.length === 0) throw new ConfigError('UPSTREAM_MCP_COMMAND is empty');
  return words;
}

/** Whether the upstream's tool `name` is to be published under this upstream's allow and deny lists. */
export function isToolAllowed(upstream: Pick<UpstreamConfig, 'allow' | 'deny'>, name: string): boolean {
  if (upstream.deny.some((pattern) => matchesPattern(pattern, name))) return false;
  return upstream.allow === undefined || upstream.allow.some((pattern) => matchesPattern(pattern, name));
}

/**
 * Whether a call of the upstream's tool may be sent again after the connection broke while the upstream may have been
 * running it: `retrySafe` says so, or, unless it is a boolean, the upstream annotates the tool read-only or idempotent.
 */
export function isResendable(
  upstream: Pick<UpstreamConfig, 'retrySafe'>,
  name: string,
  annotations: { readOnlyHint?: boolean; idempotentHint?: boolean } | undefined,
): boolean {
  const { retrySafe } = upstream;
  if (typeof retrySafe === 'boolean') return retrySafe;
  if (annotations?.readOnlyHint === true || annotations?.idempotentHint === true) return true;
  return retrySafe !== undefined && retrySafe.some((pattern) => matchesPattern(pattern, name));
}

function matchesPattern(pattern: string, name: string): boolean {
  return new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`).test(name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
