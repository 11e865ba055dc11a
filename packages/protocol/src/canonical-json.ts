// JSON with its keys sorted at every level: how catalog entries are compared (docs/catalog.md, "Decisions") and how
// equal values are recognized whatever their key order (unique items, signed request states), and the digest of a
// call (a tool and its arguments) that idempotency keys and child call keys are filed with.
import { createHash } from 'node:crypto';

/**
 * The JSON text two values are compared by: keys sorted at every level, so that equal definitions published by
 * different processes (or languages) compare equal. It recurses: callers bound the depth first (a catalog entry's by
 * CATALOG_MAX_DEPTH, a request's by the router's depth check).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/**
 * The digest a call is filed with, under an Idempotency-Key (schema defaults applied) or a child call's key (the
 * arguments the tool passed): a later call under the key must repeat the same tool and arguments, in any key order.
 */
export function callDigest(tool: string, args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson([tool, args ?? {}]))
    .digest('base64url');
}
