// The Streamable HTTP endpoint (2025-11-25 transport) on /mcp: guards first (DNS rebinding, authentication), then
// one handler per HTTP method. POST carries one JSON-RPC message; the session lives in Redis, so any replica
// answers any request.
import express, { type Router } from 'express';
import { SecurityEvent } from '@mcp-tasks/engine';
import { ErrorCode } from '@mcp-tasks/protocol';
import { authGuard } from '../auth.ts';
import type { ApiServices } from '../context.ts';
import { rebindingGuard } from '../http-guards.ts';
import { sendHttpError } from '../responses.ts';
import { bodyErrorHandler, rawBody, requireJsonContentType } from './body.ts';
import { handleDelete } from './delete.ts';
import { handleGet } from './get.ts';
import { handlePost } from './post.ts';
import { rejected } from './session-gate.ts';

export function mcpRouter(services: ApiServices): Router {
  const router = express.Router();
  router.use(
    '/mcp',
    rebindingGuard({ bindHost: services.config.HOST, allowedOrigins: services.config.ALLOWED_ORIGINS }),
    authGuard(services.security.auth, (req, outcome) => {
      if (outcome.ok) return;
      services.security.rates.count(SecurityEvent.AuthFailure).catch(() => undefined);
      rejected(services, req, { reason: outcome.reason === 'missing' ? 'no_token' : 'invalid_token' });
    }),
  );
  router.post('/mcp', requireJsonContentType, rawBody(services.config.MAX_BODY_BYTES), (req, res, next) => {
    handlePost(services, req, res).catch(next);
  });
  router.get('/mcp', (req, res, next) => {
    handleGet(services, req, res).catch(next);
  });
  router.delete('/mcp', (req, res, next) => {
    handleDelete(services, req, res).catch(next);
  });
  router.all('/mcp', (_req, res) => {
    res.set('Allow', 'POST, GET, DELETE');
    sendHttpError(res, 405, ErrorCode.InvalidRequest, 'Method not allowed');
  });
  router.use('/mcp', bodyErrorHandler(services.config.MAX_BODY_BYTES, services.log));
  return router;
}
