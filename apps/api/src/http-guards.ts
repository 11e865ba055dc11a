// Transport-level checks of the Streamable HTTP spec that run before any JSON-RPC: DNS-rebinding protection
// (Host and Origin). Content negotiation is in responses.ts.
import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from '@mcp-tasks/protocol';
import { sendHttpError } from './responses.ts';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase());
}

function hostnameOf(hostHeader: string): string {
  // "[::1]:3000" -> "[::1]", "localhost:3000" -> "localhost"
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  const colon = hostHeader.lastIndexOf(':');
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon);
}

export interface GuardOptions {
  /** Bound address; a loopback bind accepts only loopback Host and Origin names unless lists are given. */
  bindHost: string;
  allowedOrigins: readonly string[];
}

/** Rejects requests a browser could have been tricked into sending to a local server (403). */
export function rebindingGuard(options: GuardOptions) {
  const loopbackOnly = isLoopbackHost(options.bindHost);
  return (req: Request, res: Response, next: NextFunction) => {
    const host = req.headers.host;
    if (loopbackOnly && (!host || !isLoopbackHost(hostnameOf(host)))) {
      sendHttpError(res, 403, ErrorCode.InvalidRequest, `Forbidden: Host '${host ?? ''}' is not allowed`);
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, options, loopbackOnly)) {
      sendHttpError(res, 403, ErrorCode.InvalidRequest, `Forbidden: Origin '${origin}' is not allowed`);
      return;
    }
    next();
  };
}

function originAllowed(origin: string, options: GuardOptions, loopbackOnly: boolean): boolean {
  if (options.allowedOrigins.includes(origin)) return true;
  if (options.allowedOrigins.length > 0) return false;
  if (!loopbackOnly) return true;
  try {
    return isLoopbackHost(new URL(origin).hostname);
  } catch {
    return false;
  }
}
