// A task's webhook (docs/webhooks.md): where the runner posts the task, signed, when it changes. Named by a call in
// `_meta['mcp-task-runner/webhook']` (RunnerMeta.Webhook) or configured by an operator for a principal; kept on the
// task's record, so that the step that moves the task queues the delivery.
import { z } from 'zod';
import { InvalidInputError } from './errors.ts';
import { RunnerMeta } from './meta.ts';
import { describeIssues } from './schemas.ts';

/** Which changes are delivered: the terminal one only (the default), or every change of status. */
export const WebhookEvents = { Terminal: 'terminal', All: 'all' } as const;
export type WebhookEvents = (typeof WebhookEvents)[keyof typeof WebhookEvents];

export interface WebhookTarget {
  url: string;
  events: WebhookEvents;
}

/** The longest webhook URL accepted (a record carries it for the task's life). */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const EVENTS = z.enum([WebhookEvents.Terminal, WebhookEvents.All], {
  message: `use '${WebhookEvents.Terminal}' (the default) or '${WebhookEvents.All}'`,
});

/** The `_meta` value: the URL alone, or `{ url, events }`. */
const WebhookMetaSchema = z.strictObject({ url: z.string(), events: EVENTS.optional() });

/**
 * A call's webhook from its `_meta` value; InvalidInputError (-32602 on both wires) saying what to send instead when it
 * is not one. Checks the form only: whether the target may be reached is the engine's (outbound-targets.ts).
 */
export function parseWebhookMeta(value: unknown): WebhookTarget {
  const parsed = WebhookMetaSchema.safeParse(typeof value === 'string' ? { url: value } : value);
  if (!parsed.success) {
    throw new InvalidInputError(
      `_meta '${RunnerMeta.Webhook}': ${describeIssues(parsed.error)}; send "https://..." or ` +
        `{"url": "https://...", "events": "terminal" | "all"}`,
    );
  }
  const { url, events } = parsed.data;
  return { url: checkWebhookUrl(url, `_meta '${RunnerMeta.Webhook}'`), events: events ?? WebhookEvents.Terminal };
}

/**
 * The URL as it will be called, or InvalidInputError naming `where`: absolute http(s), at most
 * MAX_WEBHOOK_URL_LENGTH characters, without credentials (a record, a log line and `mcpt inspect` show it) and without
 * a fragment (never sent).
 */
export function checkWebhookUrl(url: string, where: string): string {
  const refuse = (why: string): never => {
    throw new InvalidInputError(`${where}: ${why}`);
  };
  if (url.length > MAX_WEBHOOK_URL_LENGTH) refuse(`the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse(`'${url}' is not an absolute URL`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') refuse('the URL must be http:// or https://');
  if (parsed.username !== '' || parsed.password !== '') {
    refuse('the URL must not carry credentials: deliveries are signed (webhook-signature) instead');
  }
  if (parsed.hash !== '') refuse('the URL must not have a #fragment');
  return parsed.href;
}
