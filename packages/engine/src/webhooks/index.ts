/**
 * Tasks' webhooks (docs/webhooks.md): their settings, Standard Webhooks signatures, and the workers' delivery
 * loop.
 */
export { WebhookDelivery, webhookBody } from './webhook-delivery.ts';
export { loadWebhookSettings, WebhookEnvSchema, type WebhookSettings } from './webhook-settings.ts';
export { parseWebhookSecrets, webhookSignature } from './webhook-signing.ts';
