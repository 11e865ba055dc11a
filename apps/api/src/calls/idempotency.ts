// Idempotency keys of tools/call (docs/durable-execution.md, "Idempotency keys"): read once for both wires from the
// `Idempotency-Key` HTTP header or, for clients that cannot set headers, from `params._meta` under
// RunnerMeta.IdempotencyKey; the call is filed under it with protocol's callDigest. Whether a key names a task already
// is decided where the task is created, in the create script's step (TaskService.create): on any replica, at once.
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidInputError, RunnerMeta } from '@mcp-tasks/protocol';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** Printable ASCII, as a Structured Field string may hold (the header's form in the IETF draft). */
const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * The request's idempotency key, or undefined without one. Refused (InvalidInputError, -32602) when it is empty,
 * longer than `maxLength`, not printable ASCII, or given twice with different values (header and `_meta`). The header
 * may carry the key as a Structured Field string (`"k-1"`) or bare (`k-1`).
 */
export function idempotencyKeyOf(
  headers: IncomingHttpHeaders,
  meta: Record<string, unknown> | undefined,
  maxLength: number,
): string | undefined {
  const header = headers[IDEMPOTENCY_HEADER];
  const fromHeader = header === undefined ? undefined : unquoted(Array.isArray(header) ? header.join(', ') : header);
  const fromMeta = meta?.[RunnerMeta.IdempotencyKey];
  if (fromMeta !== undefined && typeof fromMeta !== 'string') {
    throw new InvalidInputError(`_meta '${RunnerMeta.IdempotencyKey}' must be a string`);
  }
  if (fromHeader !== undefined && fromMeta !== undefined && fromHeader !== fromMeta) {
    throw new InvalidInputError(
      `The Idempotency-Key header and _meta '${RunnerMeta.IdempotencyKey}' name different keys: send one of them`,
    );
  }
  const key = fromHeader ?? fromMeta;
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > maxLength || !PRINTABLE.test(key)) {
    throw new InvalidInputError(
      `Invalid Idempotency-Key: use 1 to ${maxLength} printable ASCII characters (IDEMPOTENCY_KEY_MAX_LENGTH), ` +
        'e.g. a UUID',
    );
  }
  return key;
}

/** A Structured Field string's content (`"a\"b"` -> `a"b`); a bare value as it is. */
function unquoted(value: string): string {
  const trimmed = value.trim();
  if (trimmed.length < 2 || !trimmed.startsWith('"') || !trimmed.endsWith('"')) return trimmed;
  return trimmed.slice(1, -1).replace(/\\(["\\])/g, '$1');
}
