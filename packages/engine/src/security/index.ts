/**
 * Security: principals' rate limits, connection slots, the audit trail, the SSRF rules of outbound requests,
 * and callback tokens of external tasks.
 */
export { audit, AuditEvent, type AuditFields, auditLogger, auditObserver } from './audit.ts';
export { CallbackEnvSchema, callbackUrl, signCallbackToken, verifyCallbackToken } from './callback-token.ts';
export { type ConnectionSlot, ConnectionSlots } from './connection-slots.ts';
export { OutboundTargets } from './outbound-targets.ts';
export {
  type RateCharge,
  RateLimiter,
  RateScope,
  type RateVerdict,
  registerSecurityCounters,
  SecurityEvent,
} from './rate-limiter.ts';
