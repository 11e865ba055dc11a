// What must not reach a log line, an error message or an operator's view: credentials in configuration values and
// URLs, and session ids where they are the only credential.
import { createHash } from 'node:crypto';

/**
 * Variables whose whole value is a credential (ADMIN_TOKEN, AUTH_JWT_SECRET, CALLBACK_SECRET, METRICS_TOKEN,
 * AUTH_API_KEYS, ...): an error about one names it and what it accepts, never its value, because start-up errors
 * end up in logs that many people read.
 */
export function isSecretVariable(name: string): boolean {
  return /(^|_)(SECRET|TOKEN|PASSWORD|KEY|KEYS)$/.test(name);
}

/** `scheme://user:password@host` anywhere in a text, with the password masked (REDIS_URL, REDIS_CLUSTER_NODES, ...). */
export function maskUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:@/\s,'"]*:)[^@/\s,'"]+@/gi, '$1***@');
}

/**
 * What logs show instead of a session id when the session id is a credential (no authentication): the first 16 hex
 * digits of its SHA-256, so that lines can still be correlated, and an operator who holds an id can find its lines
 * (`printf %s "$SESSION_ID" | sha256sum | cut -c1-16`), but a log reader cannot use the session.
 */
export function sessionDigest(sessionId: string): string {
  // A digest is left as it is: a line or a view labelled twice still names the same session.
  if (DIGEST.test(sessionId)) return sessionId;
  let digest = recentDigests.get(sessionId);
  if (digest === undefined) {
    digest = `sha256:${createHash('sha256').update(sessionId, 'utf8').digest('hex').slice(0, 16)}`;
    // A session's lines come in runs (its audit records name it twice per task): its digest is kept, a few
    // thousand sessions at most, the whole lot dropped when full rather than tracking which is oldest.
    if (recentDigests.size >= MAX_KEPT_DIGESTS) recentDigests.clear();
    recentDigests.set(sessionId, digest);
  }
  return digest;
}

const MAX_KEPT_DIGESTS = 4096;
const recentDigests = new Map<string, string>();
/** A digest as sessionDigest writes it; session ids are UUIDs (`m-<uuid>` for a 2026 request context), never this. */
const DIGEST = /^sha256:[0-9a-f]{16}$/;

const SESSION_OWNER = 'session:';

/**
 * How an owner is shown wherever people read it (logs, audit records, the dashboard and its JSON, `/metrics` labels,
 * the CLI): `session:<id>`, whose id is a bearer credential (the only one without authentication), as
 * `session:sha256:<16 hex digits>`; principals (`principal:key:<name>`, `principal:jwt:<iss>|<sub>`: names an
 * operator configured or an identity provider issued, not credentials) and `anonymous:<address>` as they are.
 * Unkeyed on purpose: a session id has 122 random bits, so its digest cannot be reversed by guessing, and an
 * operator who holds an id can compute its label (docs/security.md, "Operators' views").
 */
export function ownerLabel(owner: string): string {
  return owner.startsWith(SESSION_OWNER) ? SESSION_OWNER + sessionDigest(owner.slice(SESSION_OWNER.length)) : owner;
}

/** Whether `owner` is a label ownerLabel made of a session owner (it cannot be turned back into the owner). */
export function isSessionOwnerLabel(owner: string): boolean {
  return owner.startsWith(SESSION_OWNER) && DIGEST.test(owner.slice(SESSION_OWNER.length));
}

/**
 * A log record's fields with session credentials replaced by their digests: task owners of the form
 * `session:<id>` (`owner`, `principal`) always, since such an owner exists only without authentication, and
 * `sessionId` fields when `hashSessionIds` says the session id is a credential.
 */
export function redactSessionFields<T extends Record<string | symbol, unknown>>(record: T, hashSessionIds: boolean): T {
  for (const field of ['owner', 'principal'] as const) {
    const value = record[field];
    if (typeof value === 'string') (record as Record<string, unknown>)[field] = ownerLabel(value);
  }
  const sessionId = record['sessionId'];
  if (hashSessionIds && typeof sessionId === 'string') {
    (record as Record<string, unknown>)['sessionId'] = sessionDigest(sessionId);
  }
  return record;
}
