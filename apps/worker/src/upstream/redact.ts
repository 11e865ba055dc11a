// What an upstream writes to stderr is its own log, and servers print tokens and connection strings there: it goes
// to the worker's log only, with credentials masked, and never into a message a client reads (docs/gateway.md).
import { maskUrlPasswords } from '@mcp-tasks/engine';
import type { UpstreamConfig } from './config.ts';

const MASK = '***';
/** `Bearer <token>`, `Basic <credentials>`. */
const AUTH_SCHEME = /\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi;
/** `token=...`, `"password": "..."`, `API_KEY: ...`, `--secret ...` and the like. */
const NAMED_SECRET =
  /\b([A-Za-z0-9_-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|authorization|cookie))(["']?\s*[:=]\s*|\s+)(["']?)[^\s"',;&]+/gi;
/** A JSON Web Token. */
const JWT = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g;

/** The values this upstream's configuration holds that are secrets the worker knows: header values, env values. */
export function knownSecrets(upstream: Pick<UpstreamConfig, 'headers' | 'env'>): string[] {
  return [...Object.values(upstream.headers), ...Object.values(upstream.env)].filter((value) => value.length >= 6);
}

/** `text` with credentials masked: URL passwords, auth schemes, named secrets, JWTs, and the `known` values. */
export function redactSecrets(text: string, known: readonly string[] = []): string {
  let redacted = text;
  for (const secret of known) redacted = redacted.split(secret).join(MASK);
  return maskUrlPasswords(redacted)
    .replace(AUTH_SCHEME, `$1 ${MASK}`)
    .replace(JWT, MASK)
    .replace(NAMED_SECRET, (_, name: string, separator: string, quote: string) => `${name}${separator}${quote}${MASK}`);
}
