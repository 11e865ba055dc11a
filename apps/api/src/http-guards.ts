// Transport-level checks of the Streamable HTTP spec that run before any JSON-RPC: DNS-rebinding protection
// (Host and Origin). Content negotiation is in responses.ts.
import type { NextFunction, Request, Response } from 'express';
import { hostAllowed, hostRefusal, isLoopbackHost } from '@mcp-tasks/runtime';
import { ErrorCode } from '@mcp-tasks/protocol';
import { sendHttpError } from './responses.ts';

export interface GuardOptions {
  /** Bound address; a loopback bind accepts only loopback Host names, and loopback Origins unless a list is given. */
  bindHost: string;
  /** ALLOWED_ORIGINS, as serialized origins (`scheme://host[:port]`). */
  allowedOrigins: readonly string[];
}

/** Rejects requests a browser could have been tricked into sending to a local server (403). */
export function rebindingGuard(options: GuardOptions) {
  const loopbackOnly = isLoopbackHost(options.bindHost);
  // A client names the same Host in each of its requests: the last allowed one is kept.
  let allowedHost: string | undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    const host = req.headers.host;
    if (loopbackOnly && (host === undefined || host !== allowedHost)) {
      if (!hostAllowed(host, options.bindHost)) {
        sendHttpError(res, 403, ErrorCode.InvalidRequest, `Forbidden: Host '${host ?? ''}' is not allowed`);
        return;
      }
      allowedHost = host;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, options)) {
      sendHttpError(
        res,
        403,
        ErrorCode.InvalidRequest,
        `Forbidden: Origin '${origin}' is not allowed (ALLOWED_ORIGINS lists the browser origins this server accepts)`,
      );
      return;
    }
    next();
  };
}

/**
 * The operators' routes (/healthz, /readyz, /metrics) on a loopback bind answer only a loopback Host: what they
 * serve there without a token must not be read by a page that rebinds its name to 127.0.0.1. Plain text: they are
 * not JSON-RPC endpoints.
 */
export function loopbackHostGuard(bindHost: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (hostAllowed(req.headers.host, bindHost)) {
      next();
      return;
    }
    res.status(403).type('text/plain').send(hostRefusal(req.headers.host));
  };
}

/**
 * Whether a request that carries an Origin (a browser's) may go on. Only the allowlist, or on a loopback bind
 * without one, loopback origins, pass. Comparing the Origin with the Host header would not do: a DNS-rebinding
 * page is served from the attacker's name, which then resolves to us, so its Origin and Host agree. Requests
 * without an Origin (not sent by a browser, or a same-origin GET) are not affected.
 */
export function originAllowed(origin: string, options: GuardOptions): boolean {
  if (options.allowedOrigins.length > 0) return options.allowedOrigins.includes(origin.toLowerCase());
  if (!isLoopbackHost(options.bindHost)) return false;
  try {
    return isLoopbackHost(new URL(origin).hostname);
  } catch {
    return false;
  }
}
