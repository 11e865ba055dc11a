// The /mcp endpoint every wire shares: refusals counted, guards (DNS rebinding, CORS, authentication), the body,
// then the wire of the request's revision (../wires/index.ts): a POST carries one JSON-RPC message to the wire that
// claims it; GET and DELETE go to the wire with sessions (whose sessions live in Redis, so any replica answers).
import { IncomingMessage, ServerResponse, type RequestListener, type ServerOptions } from 'node:http';
import express, {
  type ErrorRequestHandler,
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { SecurityEvent, type RunnerMetrics } from '@mcp-tasks/engine';
import { ErrorCode } from '@mcp-tasks/protocol';
import { authGuard } from '../auth.ts';
import type { ApiServices } from '../context.ts';
import { corsForMcp } from '../cors.ts';
import { rebindingGuard } from '../http-guards.ts';
import { sendHttpError } from '../responses.ts';
import { bodyErrorHandler, rawBody, requireJsonContentType } from './body.ts';
import { wireServing } from '../wires/index.ts';
import { handlePost } from './post.ts';
import { rejected } from './rejected.ts';

export interface McpEndpoint {
  /** Every /mcp request: GET, DELETE, other methods (405), and POSTs `listener` leaves to express (`/mcp/`, `/MCP?x`). */
  router: Router;
  /**
   * The HTTP server's request listener: `POST /mcp` exactly, the path of every JSON-RPC message, runs the router's
   * steps for it in order, in express's request and response (what `app.handle` sets up) but without its router's
   * matching of paths and layers; every other request goes to `app`.
   */
  listener(app: Express): RequestListener;
  /**
   * The HTTP server's options: requests and responses made with express's prototypes (app.request, app.response)
   * from the start, which express and `listener` would otherwise set on each of them.
   */
  serverOptions(app: Express): ServerOptions;
}

export function mcpEndpoint(services: ApiServices): McpEndpoint {
  const count = countRefusals(services.metrics);
  const guards: RequestHandler[] = [
    rebindingGuard({ bindHost: services.config.HOST, allowedOrigins: services.config.ALLOWED_ORIGINS }),
    // CORS after the guard (a forbidden origin's preflight is 403) and before auth (preflights carry no token).
    corsForMcp({ maxAgeSeconds: services.config.CORS_MAX_AGE_SECONDS }),
    authGuard(services.security.auth, (req, outcome) => {
      if (outcome.ok) return;
      services.security.rates.count(SecurityEvent.AuthFailure).catch(() => undefined);
      rejected(services, req, { reason: outcome.reason === 'missing' ? 'no_token' : 'invalid_token' });
    }),
  ];
  const post: RequestHandler[] = [
    requireJsonContentType,
    rawBody(services.config.MAX_BODY_BYTES),
    (req, res, next) => {
      handlePost(services, req, res).catch(next);
    },
  ];
  const onError = bodyErrorHandler(services.config.MAX_BODY_BYTES, services.log);

  const router = express.Router();
  router.use('/mcp', count, ...guards);
  router.post('/mcp', ...post);
  // GET and DELETE go to the wire with sessions (the table in ../wires/index.ts).
  const allow = ['POST'];
  for (const [method, route] of [
    ['get', router.get.bind(router)],
    ['delete', router.delete.bind(router)],
  ] as const) {
    const wire = wireServing(method);
    const serve = wire?.[method]?.bind(wire);
    if (!serve) continue;
    allow.push(method.toUpperCase());
    route('/mcp', (req: Request, res: Response, next: NextFunction) => {
      serve(services, req, res).catch(next);
    });
  }
  router.all('/mcp', (_req, res) => {
    res.set('Allow', allow.join(', '));
    sendHttpError(res, 405, ErrorCode.InvalidRequest, 'Method not allowed');
  });
  router.use('/mcp', onError);

  const steps = inOrder([count, ...guards, ...post], onError);
  return {
    router,
    listener: (app) => (incoming, outgoing) => {
      if (incoming.method !== 'POST' || incoming.url !== '/mcp') {
        app(incoming, outgoing);
        return;
      }
      // What express's app.handle does before its router.
      if (app.enabled('x-powered-by')) outgoing.setHeader('X-Powered-By', 'Express');
      // Made below these prototypes by serverOptions' classes; set here should the server have been made otherwise.
      const req = (
        Object.prototype.isPrototypeOf.call(app.request, incoming)
          ? incoming
          : Object.setPrototypeOf(incoming, app.request)
      ) as Request;
      const res = (
        Object.prototype.isPrototypeOf.call(app.response, outgoing)
          ? outgoing
          : Object.setPrototypeOf(outgoing, app.response)
      ) as Response;
      req.res = res;
      res.req = req;
      res.locals = Object.create(null) as Response['locals'];
      steps(req, res, (error?: unknown) => {
        // Not reached (every step answers, or passes an error to onError, which answers): should onError throw,
        // what it answers for an unknown error.
        services.log.error('unhandled request error', { error: error instanceof Error ? error.stack : String(error) });
        sendHttpError(res, 500, ErrorCode.InternalError, 'Internal error; the server log has the details');
      });
    },
    serverOptions: (app) => expressMessages(app),
  };
}

/**
 * Node's request and response classes, below express's prototypes (app.request, app.response): what the server makes
 * is an express request and response from the start. Changing an object's prototype after it is made, as express
 * does for each request, costs V8 several times the making of the object; a class that extends Node's keeps the
 * layout V8 gives Node's own objects.
 */
function expressMessages(app: Express): ServerOptions {
  class ExpressRequest extends IncomingMessage {}
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  class ExpressResponse extends ServerResponse {}
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
}

/**
 * Counts every refused /mcp request once its answer is sent: HTTP errors by status, or by JSON-RPC code for
 * a 400 (parse error vs invalid request). JSON-RPC errors inside 200 answers are counted by the dispatcher. One
 * listener function for all requests: it reads the response it is called on.
 */
function countRefusals(metrics: RunnerMetrics): RequestHandler {
  function counted(this: Response): void {
    if (this.statusCode < 400) return;
    const code = this.locals['rpcErrorCode'] as number | undefined;
    metrics.reject(this.statusCode === 400 && code !== undefined ? code : this.statusCode);
  }
  return (_req, res, next) => {
    res.on('finish', counted);
    next();
  };
}

/**
 * Runs `handlers` as express would for one route: each calls `next()` to go on or `next(error)` to stop at
 * `onError`; a handler that throws stops there too. Handlers here never call `next('route')`.
 */
function inOrder(handlers: readonly RequestHandler[], onError: ErrorRequestHandler): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    new StepRun(handlers, onError, req, res, done).next();
  };
}

/**
 * One request's way through inOrder's handlers. A class with a bound method rather than a closure per request: the
 * api runs through tsx, whose transform names every function expression it makes (a property defined each time).
 */
class StepRun {
  index = 0;
  readonly next: (error?: unknown) => void;

  constructor(
    readonly handlers: readonly RequestHandler[],
    readonly onError: ErrorRequestHandler,
    readonly req: Request,
    readonly res: Response,
    readonly done: NextFunction,
  ) {
    this.next = this.step.bind(this);
  }

  step(error?: unknown): void {
    const { req, res, done } = this;
    if (error !== undefined && error !== null) {
      try {
        void this.onError(error, req, res, done);
      } catch (failure) {
        done(failure);
      }
      return;
    }
    const handler = this.handlers[this.index++];
    if (!handler) {
      done();
      return;
    }
    try {
      void handler(req, res, this.next);
    } catch (failure) {
      this.next(failure ?? new Error('handler threw'));
    }
  }
}
