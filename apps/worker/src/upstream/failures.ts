// What went wrong with an upstream, in our words (docs/gateway.md, "What a client sees"), and whether a call that
// failed may have started there: a call that never reached the upstream is sent again once on a fresh connection;
// one that may have started only when its tool is declared read-only or idempotent.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode as SdkErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConfig } from './config.ts';
import { upstreamText } from './redact.ts';

/** A message that never reached the upstream: the call it carried cannot have started there. */
export class NotSentError extends Error {
  override readonly name = 'NotSentError';
}

/** The response stream of a call's request broke before its answer came (an HTTP upstream that went away). */
export class StreamLostError extends Error {
  override readonly name = 'StreamLostError';
}

export type CallFailure =
  /** The request never reached the upstream (no process, connection refused, an HTTP session it no longer knows). */
  | { kind: 'unsent'; how: string }
  /** The connection broke while the upstream may have been running the call. */
  | { kind: 'cut'; how: string }
  /** The upstream answered (an error), or did not within the call's timeout: the task's error. */
  | { kind: 'answered' };

/**
 * Why connecting failed, to follow "upstream 'NAME' is unavailable: ". An upstream's own words (its answer to
 * initialize) are redacted with its configured secrets, which it may echo, and cut to its `maxTextBytes`: they reach
 * clients, logs and operators' views.
 */
export function describeConnectFailure(
  upstream: Pick<UpstreamConfig, 'connectTimeoutMs' | 'url' | 'headers' | 'env' | 'maxTextBytes'>,
  error: unknown,
  exit: string | undefined,
): string {
  if (exit !== undefined) return `it ${exit} before it answered initialize`;
  if (error instanceof McpError && error.code === (SdkErrorCode.RequestTimeout as number)) {
    return `it did not answer initialize within ${upstream.connectTimeoutMs} ms (connectTimeoutMs)`;
  }
  if (error instanceof StreamableHTTPError) return `it answered initialize with HTTP ${error.code}`;
  const code = networkCode(error);
  if (code !== undefined) return `${origin(upstream.url)} could not be reached (${code})`;
  const message = error instanceof Error ? error.message : String(error);
  return upstreamText(upstream, message.replace(/^MCP error -?\d+: /, ''));
}

/** What came of a call that threw, on `connection` (its `ended` says how a stdio child ended). */
export function classifyCallFailure(error: unknown, ended: string | undefined): CallFailure {
  if (error instanceof NotSentError) return { kind: 'unsent', how: ended ?? 'was not running' };
  // The SDK's own refusal when its transport is gone: nothing was sent.
  if (error instanceof Error && error.message === 'Not connected') return { kind: 'unsent', how: ended ?? 'was gone' };
  if (error instanceof StreamableHTTPError) {
    // A 4xx to a POST: the server did not process the request (404: it no longer knows the session, e.g. after a
    // restart). A 5xx may come after the work started.
    const status = error.code ?? 0;
    return status >= 400 && status < 500
      ? { kind: 'unsent', how: `refused the request with HTTP ${status}` }
      : { kind: 'cut', how: `answered HTTP ${error.code ?? 'with an error'}` };
  }
  if (error instanceof StreamLostError) return { kind: 'cut', how: 'dropped the response stream of the call' };
  const code = networkCode(error);
  if (code === 'ECONNREFUSED') return { kind: 'unsent', how: 'refused the connection (ECONNREFUSED)' };
  if (code !== undefined) return { kind: 'cut', how: `lost the connection (${code})` };
  if (error instanceof McpError && error.code === (SdkErrorCode.ConnectionClosed as number)) {
    return { kind: 'cut', how: ended ?? 'closed the connection' };
  }
  if (error instanceof McpError) return { kind: 'answered' };
  return { kind: 'cut', how: ended ?? 'failed' };
}

/** The system error code of a failed fetch (`ECONNREFUSED`, `ENOTFOUND`, `UND_ERR_SOCKET`, ...), if it is one. */
function networkCode(error: unknown): string | undefined {
  if (!(error instanceof TypeError)) return undefined;
  const cause = error.cause as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = cause?.code ?? cause?.cause?.code;
  if (typeof code === 'string') return code;
  return error.message === 'fetch failed' || error.message === 'terminated' ? error.message : undefined;
}

/** The endpoint's scheme, host and port: never its path or query, which may hold a credential. */
function origin(url: string | undefined): string {
  if (url === undefined) return 'the upstream';
  try {
    return new URL(url).origin;
  } catch {
    return 'the upstream';
  }
}
