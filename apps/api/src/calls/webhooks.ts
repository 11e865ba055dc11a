// A call's webhook (docs/webhooks.md), whichever wire it came in on: the one it names in `_meta` (RunnerMeta.Webhook),
// else the one an operator configured for its principal. A named one is accepted only for a task of an authenticated
// principal, when a secret signs its deliveries, and to a target the SSRF rules allow (outbound-targets.ts): each
// refusal is -32602 saying why, before anything is written.
import { audit, AuditEvent } from '@mcp-tasks/engine';
import {
  InvalidInputError,
  isPlainObject,
  parseWebhookMeta,
  RunnerMeta,
  type WebhookTarget,
} from '@mcp-tasks/protocol';
import type { CallContext, CallRequest } from './request.ts';

const WHERE = `_meta '${RunnerMeta.Webhook}'`;

/** What a wire's parse adds to its CallRequest: the `_meta` webhook as sent, when there is one. */
export function webhookMetaOf(meta: unknown): Pick<CallRequest, 'webhook'> {
  if (!isPlainObject(meta)) return {};
  const webhook = meta[RunnerMeta.Webhook];
  return webhook === undefined ? {} : { webhook };
}

/**
 * The task's webhook, or undefined; InvalidInputError for a named one that is refused. `task`: the call runs as a task,
 * or may become one (a plain call its client follows with task handles: its deliveries start once it is handed out).
 */
export async function webhookOf(
  context: CallContext,
  request: CallRequest,
  task: boolean,
): Promise<WebhookTarget | undefined> {
  const { services, caller } = context;
  const settings = services.webhooks;
  if (request.webhook === undefined) return task ? settings.configuredFor(caller.owner) : undefined;
  const webhook = parseWebhookMeta(request.webhook);
  if (!caller.owner.startsWith('principal:')) {
    throw new InvalidInputError(
      `${WHERE}: webhooks are accepted only from an authenticated principal, and this request has none ` +
        '(send it with Authorization: Bearer <API key or token>)',
    );
  }
  if (!task) {
    throw new InvalidInputError(
      `${WHERE}: webhooks are delivered for tasks, and this call does not run as one (ask for a task: ` +
        "2025-11-25 params.task, 2026-07-28 the tasks extension; a tool with taskSupport 'forbidden' never runs as one)",
    );
  }
  if (!settings.keysFor(caller.owner)) {
    throw new InvalidInputError(`${WHERE}: this server delivers no webhooks (it has no WEBHOOK_SECRET to sign them)`);
  }
  try {
    await settings.targets.check(webhook.url, WHERE);
  } catch (error) {
    if (error instanceof InvalidInputError) {
      audit(services.security.audit, AuditEvent.AccessRejected, {
        reason: 'webhook_target',
        principal: caller.owner,
        ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
        requestId: caller.requestId,
        address: caller.address,
      });
    }
    throw error;
  }
  return webhook;
}
