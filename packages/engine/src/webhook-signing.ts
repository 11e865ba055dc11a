// Standard Webhooks signatures (docs/webhooks.md): `webhook-signature: v1,<base64 HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>">`, one per secret (space-separated) while an operator rotates them, with
// secrets written `whsec_<base64 key>`. Receivers verify with any Standard Webhooks library (the `standardwebhooks`
// npm package, svix, ...).
import { createHmac } from 'node:crypto';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** The shortest key accepted (the standard asks for 24 to 64 bytes). */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/**
 * The key of a `whsec_<base64>` secret; an Error saying what is wrong, never quoting the secret. Several secrets
 * separated by spaces each sign every delivery (a rotation: receivers accept any one).
 */
export function parseWebhookSecrets(text: string): Buffer[] {
  const secrets = text.split(/\s+/).filter(Boolean);
  if (secrets.length === 0) throw new Error('empty: write whsec_ followed by a base64 key of 24 to 64 bytes');
  return secrets.map((secret, i) => {
    const which = secrets.length > 1 ? `secret ${i + 1}: ` : '';
    if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
      throw new Error(`${which}write whsec_ followed by a base64 key (e.g. whsec_$(openssl rand -base64 32))`);
    }
    const encoded = secret.slice(WEBHOOK_SECRET_PREFIX.length);
    const key = Buffer.from(encoded, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
      throw new Error(`${which}after whsec_, a base64 key of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes`);
    }
    return key;
  });
}

/** The `webhook-signature` header of one delivery attempt: `v1,<signature>` per key, space-separated. */
export function webhookSignature(keys: readonly Buffer[], id: string, timestampSeconds: number, body: string): string {
  return keys
    .map((key) => `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`)
    .join(' ');
}
