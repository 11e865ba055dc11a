// Who may read a process's /metrics (the api's, and a worker's on WORKER_METRICS_PORT): with METRICS_TOKEN set, only
// requests that carry it; without, anyone, but only while the process is bound to a loopback address. On any other
// bind an open /metrics would show anyone who reaches the port the runner's tools, principals and load, so it
// answers 403 saying what to set, and the process says so at start-up (docs/security.md, "Metrics").
import { METRICS_CHALLENGE, metricsAccessAllowed } from './metrics.ts';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Whether a bind address (HOST, WORKER_METRICS_HOST) or a Host name is a loopback one. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase());
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
