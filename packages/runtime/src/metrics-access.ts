// Who may read a process's /metrics (the api's, and a worker's on WORKER_METRICS_PORT): with METRICS_TOKEN set, only
// requests that carry it; without, anyone, but only while the process is bound to a loopback address. On any other
// bind an open /metrics would show anyone who reaches the port the runner's tools, principals and load, so it
// answers 403 saying what to set, and the process says so at start-up (docs/security.md, "Metrics").
import { createHash, timingSafeEqual } from 'node:crypto';

/** The challenge of a /metrics request without the right METRICS_TOKEN (401). */
export const METRICS_CHALLENGE = 'Bearer realm="mcp-task-runner metrics"';

/**
 * Whether a /metrics request may be served: always without METRICS_TOKEN, else only with
 * `Authorization: Bearer <token>` (digests compared in constant time, so the time says nothing about the token).
 */
export function metricsAccessAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
  if (presented === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(token));
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Whether a bind address (HOST, WORKER_METRICS_HOST) or a Host name is a loopback one. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase());
}

/** The name part of a Host header: `[::1]:3000` -> `[::1]`, `localhost:3000` -> `localhost`. */
export function hostnameOf(hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  const colon = hostHeader.lastIndexOf(':');
  return colon === -1 ? hostHeader : hostHeader.slice(0, colon);
}

/**
 * Whether a request with this Host header may be served by a process bound to `bindHost`: on a loopback bind only
 * when it names a loopback host. A page of another site that rebinds its own name to 127.0.0.1 sends that name as
 * Host; refusing it keeps the page from reading what a loopback bind serves without a token (docs/security.md,
 * "Browsers and DNS rebinding"). On any other bind the Host is not checked.
 */
export function hostAllowed(hostHeader: string | undefined, bindHost: string): boolean {
  if (!isLoopbackHost(bindHost)) return true;
  return hostHeader !== undefined && hostHeader !== '' && isLoopbackHost(hostnameOf(hostHeader));
}

/** The body of the 403 a refused Host gets. */
export function hostRefusal(hostHeader: string | undefined): string {
  return `Forbidden: Host '${hostHeader ?? ''}' is not allowed on a loopback bind (use localhost or 127.0.0.1)\n`;
}

export interface MetricsGate {
  token: string | undefined;
  /** The address the process is bound to, and the variable that sets it (for the message). */
  bindHost: string;
  bindVariable: string;
}

export type MetricsAccess =
  { allowed: true } | { allowed: false; status: 401 | 403; headers: Record<string, string>; text: string };

/** How a /metrics request with this Authorization header is answered. */
export function metricsAccess(authorization: string | undefined, gate: MetricsGate): MetricsAccess {
  if (gate.token !== undefined) {
    if (metricsAccessAllowed(authorization, gate.token)) return { allowed: true };
    return {
      allowed: false,
      status: 401,
      headers: { 'WWW-Authenticate': METRICS_CHALLENGE },
      text: 'Unauthorized: /metrics needs Authorization: Bearer <METRICS_TOKEN>\n',
    };
  }
  if (isLoopbackHost(gate.bindHost)) return { allowed: true };
  return { allowed: false, status: 403, headers: {}, text: `Forbidden: ${unprotectedMetrics(gate)}\n` };
}

/** Why /metrics is closed on this bind and what to set; undefined when it is protected or private. */
export function metricsWarning(gate: MetricsGate): string | undefined {
  if (gate.token !== undefined || isLoopbackHost(gate.bindHost)) return undefined;
  return unprotectedMetrics(gate);
}

function unprotectedMetrics({ bindHost, bindVariable }: MetricsGate): string {
  return (
    `${bindVariable}=${bindHost} is not a loopback address and METRICS_TOKEN is unset, so /metrics answers 403 to ` +
    'everyone. Set METRICS_TOKEN (Prometheus: authorization.credentials) to scrape it, or bind to 127.0.0.1.'
  );
}
