// CORS for browser clients on /mcp (C26-COEX-6): a page on an origin the rebinding guard lets through (ALLOWED_ORIGINS,
// or loopback origins on a loopback bind) may call the endpoint and read its answers. Mounted after that guard, so a
// forbidden origin's preflight is refused with 403 like any of its requests, and before authentication, since a
// browser sends a preflight without the Authorization header it asks about.
import type { NextFunction, Request, Response } from 'express';

/** Request headers a browser client may send: the transport's of both revisions (C26-COEX-6) and Mcp-Param-* below. */
export const CORS_ALLOWED_HEADERS = [
  'Content-Type',
  'Accept',
  'Authorization',
  'Mcp-Session-Id',
  'MCP-Protocol-Version',
  'Last-Event-ID',
  'Mcp-Method',
  'Mcp-Name',
] as const;

/** Response headers a browser client must be able to read: the session id, the revision, the auth challenge. */
export const CORS_EXPOSED_HEADERS = ['Mcp-Session-Id', 'MCP-Protocol-Version', 'WWW-Authenticate'] as const;

const ALLOWED_METHODS = 'GET, POST, DELETE';

// A tool's x-mcp-header names are RFC 9110 tokens; any such Mcp-Param-{Name} a preflight asks for is allowed (a
// tool's catalog may change between the preflight and the call, so the list is not checked against it).
const PARAM_HEADER = /^mcp-param-[!#$%&'*+.^_`|~0-9a-z-]+$/i;
const STANDARD = new Set(CORS_ALLOWED_HEADERS.map((name) => name.toLowerCase()));

export interface CorsOptions {
  /** Access-Control-Max-Age of a preflight answer (CORS_MAX_AGE_SECONDS). */
  maxAgeSeconds: number;
}

/**
 * Adds CORS headers to every /mcp answer to a request with an Origin (the guard before it has allowed that origin)
 * and answers preflights (OPTIONS with Access-Control-Request-Method) with 204. The origin is echoed, never `*`,
 * and no Access-Control-Allow-Credentials is sent: clients authenticate with an explicit Authorization header,
 * which needs no cookies or credentials mode.
 */
export function corsForMcp(options: CorsOptions) {
  const exposed = CORS_EXPOSED_HEADERS.join(', ');
  return (req: Request, res: Response, next: NextFunction) => {
    // Answers differ by Origin (with or without CORS headers): caches must keep them apart. res.vary parses and
    // merges what is there; usually nothing is, and its answer is then this one header.
    if (res.hasHeader('vary')) res.vary('Origin');
    else res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined) {
      next();
      return;
    }
    res.set('Access-Control-Allow-Origin', origin);
    const requestedMethod = req.headers['access-control-request-method'];
    if (req.method !== 'OPTIONS' || requestedMethod === undefined) {
      res.set('Access-Control-Expose-Headers', exposed);
      next();
      return;
    }
    res.set('Access-Control-Allow-Methods', ALLOWED_METHODS);
    res.set('Access-Control-Allow-Headers', allowedHeaders(req.headers['access-control-request-headers']));
    res.set('Access-Control-Max-Age', String(options.maxAgeSeconds));
    res.status(204).end();
  };
}

/** The standard list plus the Mcp-Param-* names the preflight asks for (as it spelt them). */
export function allowedHeaders(requested: string | undefined): string {
  const params = (requested ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => PARAM_HEADER.test(name) && !STANDARD.has(name.toLowerCase()));
  return [...CORS_ALLOWED_HEADERS, ...new Set(params)].join(', ');
}
