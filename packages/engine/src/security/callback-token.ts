// Per-task callback tokens: what an external system presents when it reports on a task. An HMAC-SHA256 over the
// task id and an expiry with the server secret CALLBACK_SECRET, so any api replica verifies it without state.
// Format: `v1.<expiresAt epoch ms>.<base64url MAC>`; the task id travels in the callback URL and is bound by the MAC.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

const VERSION = 'v1';

/** Shared by api (verifies) and worker (signs, and builds the callback URL). */
export const CallbackEnvSchema = z.object({
  /** Secret for callback tokens; unset: no callback endpoint, external tools can only be polled. */
  CALLBACK_SECRET: z.string().min(32, 'use at least 32 characters (e.g. openssl rand -hex 32)').optional(),
  /** Base URL external systems reach the api at, e.g. https://mcp.example.com (worker only). */
  CALLBACK_BASE_URL: z.string().url().optional(),
});

export type CallbackTokenProblem = 'malformed' | 'signature' | 'expired';

export function signCallbackToken(secret: string, taskId: string, expiresAt: number): string {
  return `${VERSION}.${expiresAt}.${mac(secret, taskId, expiresAt)}`;
}

/** Checks a token for `taskId` at `now`: ok, or which check failed (a token of another task fails the signature). */
export function verifyCallbackToken(
  secret: string,
  token: string,
  taskId: string,
  now = Date.now(),
): { ok: true; expiresAt: number } | { ok: false; problem: CallbackTokenProblem } {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION || !/^\d{1,16}$/.test(parts[1] ?? '')) {
    return { ok: false, problem: 'malformed' };
  }
  const expiresAt = Number(parts[1]);
  const expected = Buffer.from(mac(secret, taskId, expiresAt));
  const given = Buffer.from(parts[2] ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, problem: 'signature' };
  if (expiresAt <= now) return { ok: false, problem: 'expired' };
  return { ok: true, expiresAt };
}

/** The URL an external system posts a task's reports to. */
export function callbackUrl(baseUrl: string, taskId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/callbacks/tasks/${encodeURIComponent(taskId)}`;
}

function mac(secret: string, taskId: string, expiresAt: number): string {
  return createHmac('sha256', secret).update(`mcpt-callback.${VERSION}.${taskId}.${expiresAt}`).digest('base64url');
}
