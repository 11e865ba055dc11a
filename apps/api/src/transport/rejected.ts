// The audit of a refused /mcp request, alike on every wire: the guards' refusals (authentication) and each wire's
// own (an unknown session, a foreign one).
import type { Request } from 'express';
import { audit, AuditEvent, type AuditFields } from '@mcp-tasks/engine';
import type { ApiServices } from '../context.ts';
import { addressOf } from '../request-origin.ts';

/** Audits a refused request (T-AUDIT-1) with the caller's address and HTTP method. */
export function rejected(services: ApiServices, req: Request, fields: AuditFields): void {
  audit(services.security.audit, AuditEvent.AccessRejected, {
    address: addressOf(req),
    httpMethod: req.method,
    ...fields,
  });
}
