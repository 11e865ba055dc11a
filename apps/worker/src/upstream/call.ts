// One call of an upstream tool on behalf of one task: cancellation, progress, log messages and input requests are
// carried across, and the upstream's answer becomes the task's outcome.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  ErrorCode as SdkErrorCode,
  GetTaskResultSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, ProtocolError, type CallToolResult, type ToolContext } from '@mcp-tasks/protocol';
import type { UpstreamPool } from './pool.ts';
import type { UpstreamSession } from './session.ts';

/** A call cut off by an upstream crash is run again at most this often (retrySafe upstreams only). */
export const MAX_RERUNS = 2;
const RERUN_PAUSE_MS = 500;

const DEFAULT_POLL_INTERVAL_MS = 1000;
const MIN_POLL_INTERVAL_MS = 100;

export async function callUpstreamTool(
  pool: UpstreamPool,
  upstreamTool: string,
  args: Record<string, unknown>,
  context: ToolContext,
  /** The upstream runs the tool as a 2025-11-25 task of its own: call it task-augmented and follow that task. */
  asTask = false,
): Promise<CallToolResult> {
  const { upstream } = pool;
  for (let run = 1; ; run++) {
    const lease = await pool.lease(context.signal);
    // Progress is relayed in order, and all of it before the result settles the task.
    let progressed = Promise.resolve();
    const progressToken = `${context.taskId}-${run}`;
    const detach = lease.session.attach({
      elicit: (params) => context.elicit(params as never),
      sample: (params) => context.sample(params),
      log: (level, data, logger) => {
        const fields = { upstream: upstream.name, upstreamLevel: level, data, ...(logger ? { logger } : {}) };
        if (level === 'debug' || level === 'info' || level === 'notice') context.log.info('upstream log', fields);
        else if (level === 'warning') context.log.warn('upstream log', fields);
        else context.log.error('upstream log', fields);
      },
      progress: (token, progress, total, message) => {
        if (token !== progressToken) return;
        progressed = progressed.then(() => context.progress(progress, total, message));
      },
    });
    try {
      // The progressToken makes the upstream report progress; it becomes the task's progress.
      const params = { name: upstreamTool, arguments: args, _meta: { progressToken } };
      const result = asTask
        ? await followUpstreamTask(lease.session, params, context, upstream.timeoutMs)
        : await lease.session.client.request({ method: 'tools/call', params }, CallToolResultSchema, {
            signal: context.signal,
            timeout: upstream.timeoutMs,
          });
      await progressed;
      return result;
    } catch (error) {
      if (context.signal.aborted) throw error;
      if (isTransportFailure(error)) {
        // The HTTP session is gone (the server restarted and answers 404) or unreachable: this session is dropped,
        // and the next call (or the restart of the first session) opens a new one.
        await lease.session.close();
      } else if (!isConnectionLoss(error)) {
        throw asTaskError(upstream.name, upstreamTool, upstream.timeoutMs, error);
      }
      const how = isTransportFailure(error) ? `: ${(error as Error).message}` : lease.session.stderrNote();
      const cause = `upstream '${upstream.name}' stopped during the call of '${upstreamTool}'${how}`;
      if (!upstream.retrySafe) {
        throw new ProtocolError(
          ErrorCode.InternalError,
          `The ${cause}; it was not run again because the upstream is not marked retrySafe.`,
          { upstream: upstream.name, tool: upstreamTool },
        );
      }
      if (run > MAX_RERUNS) {
        throw new ProtocolError(ErrorCode.InternalError, `The ${cause}, ${run} times; giving up.`, {
          upstream: upstream.name,
          tool: upstreamTool,
        });
      }
      context.log.warn('upstream stopped during a call: running it again (retrySafe)', {
        upstream: upstream.name,
        run,
      });
      await pause(RERUN_PAUSE_MS * run, context.signal);
    } finally {
      detach();
      lease.release();
    }
  }
}

/**
 * Calls the tool task-augmented, polls the upstream's task at its pollInterval, and takes its result with
 * tasks/result once it is terminal or needs input (its elicitation or sampling requests arrive on that request and
 * are relayed like any other). A cancelled or timed-out call cancels the upstream task.
 */
async function followUpstreamTask(
  session: UpstreamSession,
  params: Record<string, unknown>,
  context: ToolContext,
  timeoutMs: number,
): Promise<CallToolResult> {
  const { client } = session;
  const deadline = Date.now() + timeoutMs;
  const remaining = () => Math.max(1, deadline - Date.now());
  const created = await client.request(
    { method: 'tools/call', params: { ...params, task: { ttl: timeoutMs } } },
    CreateTaskResultSchema,
    { signal: context.signal, timeout: remaining() },
  );
  const taskId = created.task.taskId;
  context.log.info('upstream task created', { upstreamTaskId: taskId });
  try {
    let task = created.task;
    let lastMessage: string | undefined;
    for (;;) {
      if (task.statusMessage !== undefined && task.statusMessage !== lastMessage) {
        lastMessage = task.statusMessage;
        context.log.info('upstream task status', { upstreamTaskId: taskId, status: task.status, message: lastMessage });
      }
      if (['completed', 'failed', 'cancelled', 'input_required'].includes(task.status)) {
        return await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, {
          signal: context.signal,
          timeout: remaining(),
        });
      }
      if (Date.now() >= deadline) throw new McpError(SdkErrorCode.RequestTimeout, 'Request timed out');
      const wait = Math.max(MIN_POLL_INTERVAL_MS, task.pollInterval ?? DEFAULT_POLL_INTERVAL_MS);
      await pause(Math.min(wait, remaining()), context.signal);
      task = await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema, {
        signal: context.signal,
        timeout: remaining(),
      });
    }
  } catch (error) {
    if (context.signal.aborted || isTimeout(error)) {
      // Best effort, and without the aborted signal: the upstream should stop work nobody waits for.
      await client
        .request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema, { timeout: 5000 })
        .catch(() => undefined);
    }
    throw error;
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof McpError && error.code === (SdkErrorCode.RequestTimeout as number);
}

function isTransportFailure(error: unknown): boolean {
  return error instanceof StreamableHTTPError || (error instanceof TypeError && error.message === 'fetch failed');
}

function isConnectionLoss(error: unknown): boolean {
  return error instanceof McpError && error.code === (SdkErrorCode.ConnectionClosed as number);
}

/**
 * The upstream's JSON-RPC error is the task's error, as the upstream sent it; the SDK's own failures (a timeout, a
 * transport error) become an internal error that says what happened.
 */
export function asTaskError(upstream: string, tool: string, timeoutMs: number, error: unknown): Error {
  if (error instanceof McpError) {
    if (error.code === (SdkErrorCode.RequestTimeout as number)) {
      return new ProtocolError(
        ErrorCode.InternalError,
        `Upstream '${upstream}' did not answer the call of '${tool}' within ${timeoutMs} ms (timeoutMs); the call was cancelled upstream.`,
        { upstream, tool, timeoutMs },
      );
    }
    const message = error.message.replace(/^MCP error -?\d+: /, '');
    return new ProtocolError(error.code, message, error.data);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ProtocolError(ErrorCode.InternalError, `Upstream '${upstream}' failed the call of '${tool}': ${message}`, {
    upstream,
    tool,
  });
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
