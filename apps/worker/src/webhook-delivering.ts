// The worker's webhook delivery loop (docs/webhooks.md): started once the engine is open, when the worker has a
// secret to sign with (WEBHOOK_SECRET, or a principal's own in WEBHOOKS_BY_PRINCIPAL / WEBHOOKS_FILE), and stopped
// before the connections close, after its attempts under way end (each within WEBHOOK_TIMEOUT_MS).
import { WebhookDelivery, type CleanupStack, type Logger } from '@mcp-tasks/engine';
import type { WorkerEngine } from './worker-engine.ts';

export async function startWebhookDelivery(
  { engine }: WorkerEngine,
  worker: string,
  log: Logger,
  cleanup: CleanupStack,
): Promise<void> {
  const settings = engine.webhooks;
  if (!settings.enabled) return;
  const delivery = new WebhookDelivery(engine.store, engine.events, engine.subscriber, engine.keys, {
    worker,
    settings,
    log,
  });
  await delivery.start();
  cleanup.add('webhook-delivery', delivery, (d) => d.stop());
}
