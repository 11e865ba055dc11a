// The test's view of the shared HTTP client, plus timing and assertion helpers.
import { expect } from 'chai';
import { RpcError } from '@mcp-tasks/client';
export { McpHttpClient as McpTestClient, RpcError, type HttpReply, type RpcReply } from '@mcp-tasks/client';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value, or fails after `timeoutMs`; `undefined` and `null` (Redis's "no such key") mean "not yet". */
export async function eventually<T>(
  check: () => Promise<T | undefined | null> | T | undefined | null,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Awaits a call that must fail with JSON-RPC error `code` (and, if given, a message) and returns the error. */
export async function expectRpcError(
  promise: Promise<unknown>,
  code: number,
  message?: RegExp | string,
): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(RpcError);
    const rpc = error as RpcError;
    expect(rpc.code, rpc.message).to.equal(code);
    if (typeof message === 'string') expect(rpc.message).to.equal(`${code}: ${message}`);
    else if (message) expect(rpc.message).to.match(message);
    return rpc;
  }
  throw new Error(`expected JSON-RPC error ${code}`);
}
