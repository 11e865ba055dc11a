// What an upstream writes to stderr is its own log, and servers print tokens and connection strings there: it goes
// to the worker's log only, with credentials masked, and never into a message a client reads (docs/gateway.md). Every
// text of an upstream that we keep or show is also cut to the upstream's `maxTextBytes`.
import { maskUrlPasswords } from '@mcp-tasks/runtime';
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
  return maskUrlPasswords(maskKnown(text, known))
    .replace(AUTH_SCHEME, `$1 ${MASK}`)
    .replace(JWT, MASK)
    .replace(NAMED_SECRET, (_, name: string, separator: string, quote: string) => `${name}${separator}${quote}${MASK}`);
}

/** `text` with the `known` values masked, and nothing else changed. */
export function maskKnown(text: string, known: readonly string[]): string {
  let masked = text;
  for (const secret of known) if (masked.includes(secret)) masked = masked.split(secret).join(MASK);
  return masked;
}

/**
 * `value` with every string in it (keys and values, at any depth) rid of the `known` secrets: an upstream's error
 * data or log message may echo the credentials we sent it. Returned as it is when it holds none.
 */
export function redactKnown<T>(value: T, known: readonly string[]): T {
  if (known.length === 0 || value === undefined) return value;
  const json = JSON.stringify(value);
  if (json === undefined || !known.some((secret) => json.includes(JSON.stringify(secret).slice(1, -1)))) return value;
  return JSON.parse(
    maskKnown(
      json,
      known.map((secret) => JSON.stringify(secret).slice(1, -1)),
    ),
  ) as T;
}

/** An upstream's text as we keep or show it: credentials masked, its configured secrets too, cut to `maxTextBytes`. */
export function upstreamText(upstream: Pick<UpstreamConfig, 'headers' | 'env' | 'maxTextBytes'>, text: string): string {
  return boundedText(redactSecrets(text, knownSecrets(upstream)), upstream.maxTextBytes);
}

const ELLIPSIS = '…';

/** `text` cut to at most `maxBytes` bytes of UTF-8 (a cut text ends with an ellipsis), on a character boundary. */
export function boundedText(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const room = maxBytes - Buffer.byteLength(ELLIPSIS, 'utf8');
  // A UTF-8 decoder replaces a sequence cut short with U+FFFD: dropped, so the cut falls between characters.
  const cut = Buffer.from(text.slice(0, room), 'utf8')
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${cut}${ELLIPSIS}`;
}
