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
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamTaskRef } from '@mcp-tasks/engine';
import { ErrorCode, ProtocolError, type CallToolResult, type ToolContext } from '@mcp-tasks/protocol';
import { resumePointOf, type ResumePoint } from '../resume-point.ts';
import { AbortReason } from '../running-tasks.ts';
import type { Lease, UpstreamPool } from './pool.ts';
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
  const resumePoint = resumePointOf(context);
  const saved = resumePoint?.upstreamTask;
  if (saved !== undefined) {
    // An earlier attempt of this job (its worker died, or handed the job back) created an upstream task: follow it
    // rather than call the tool again, whatever retrySafe says, since the tool is not run twice.
    const resumed =
      saved.upstream === upstream.name ? await resumeUpstreamTask(pool, upstreamTool, saved, context) : undefined;
    if (resumed) return resumed.result;
    // The upstream no longer knows it (a restart, an expiry): as after any crash, the tool runs again only when the
    // upstream is retrySafe.
    const cause = `The worker that called '${upstreamTool}' on upstream '${upstream.name}' stopped, and the upstream no longer knows its task ${saved.taskId}`;
    if (!upstream.retrySafe) {
      throw new ProtocolError(
        ErrorCode.InternalError,
        `${cause}; it was not run again because the upstream is not marked retrySafe.`,
        {
          upstream: upstream.name,
          tool: upstreamTool,
          upstreamTaskId: saved.taskId,
        },
      );
    }
    context.log.warn('upstream task unknown upstream: calling the tool again (retrySafe)', {
      upstream: upstream.name,
      upstreamTaskId: saved.taskId,
    });
  }
  for (let run = 1; ; run++) {
    const lease = await pool.lease(context.signal);
    const progressToken = `${context.taskId}-${run}`;
    const call = attachCall(lease.session, upstream.name, context, (token) => token === progressToken);
    try {
      // The progressToken makes the upstream report progress; it becomes the task's progress.
      const params = { name: upstreamTool, arguments: args, _meta: { progressToken } };
      const result = asTask
        ? await followUpstreamTask(lease.session, params, context, upstream.timeoutMs, resumePoint)
        : await lease.session.client.request({ method: 'tools/call', params }, CallToolResultSchema, {
            signal: context.signal,
            timeout: upstream.timeoutMs,
          });
      await call.progressed();
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
      call.detach();
      lease.release();
    }
  }
}

/**
 * Routes the upstream's input requests, log messages and progress on `session` to the task until `detach()`.
 * `progressed()` settles once every progress update relayed so far has reached the task (all of it goes before the
 * result settles the task, in order).
 */
function attachCall(
  session: UpstreamSession,
  upstream: string,
  context: ToolContext,
  ours: (progressToken: string | number) => boolean,
): { detach: () => void; progressed: () => Promise<void> } {
  let progressed = Promise.resolve();
  const detach = session.attach({
    elicit: (params) => context.elicit(params as never),
    sample: (params) => context.sample(params),
    log: (level, data, logger) => {
      const fields = { upstream, upstreamLevel: level, data, ...(logger ? { logger } : {}) };
      if (level === 'debug' || level === 'info' || level === 'notice') context.log.info('upstream log', fields);
      else if (level === 'warning') context.log.warn('upstream log', fields);
      else context.log.error('upstream log', fields);
    },
    progress: (token, progress, total, message) => {
      if (!ours(token)) return;
      progressed = progressed.then(() => context.progress(progress, total, message));
    },
  });
  return { detach, progressed: () => progressed };
}

/**
 * Calls the tool task-augmented and follows the upstream's task. Over HTTP the task is stored on our job first, so
 * that another worker can follow it should this one die (a stdio upstream dies with us: nothing to resume there).
 */
async function followUpstreamTask(
  session: UpstreamSession,
  params: Record<string, unknown>,
  context: ToolContext,
  timeoutMs: number,
  resumePoint: ResumePoint | undefined,
): Promise<CallToolResult> {
  const deadline = Date.now() + timeoutMs;
  const created = await session.client.request(
    { method: 'tools/call', params: { ...params, task: { ttl: timeoutMs } } },
    CreateTaskResultSchema,
    { signal: context.signal, timeout: timeoutMs },
  );
  const taskId = created.task.taskId;
  context.log.info('upstream task created', { upstreamTaskId: taskId });
  if (resumePoint && session.upstream.url !== undefined) {
    const sessionId = session.httpSessionId;
    await resumePoint.saveUpstreamTask({
      upstream: session.upstream.name,
      taskId,
      ...(sessionId !== undefined ? { sessionId } : {}),
    });
  }
  return followTask(session, created.task, context, deadline);
}

/**
 * Follows the task an earlier attempt of this job created upstream: first on the HTTP session that created it
 * (servers such as server-everything keep their tasks per session), then, when that session is gone, on a new one
 * (a server that keeps tasks beyond a session, as the spec allows without an authorization context, or binds them to
 * the authorization context our headers carry). Undefined when the upstream answers that it does not know the task.
 */
async function resumeUpstreamTask(
  pool: UpstreamPool,
  upstreamTool: string,
  saved: UpstreamTaskRef,
  context: ToolContext,
): Promise<{ result: CallToolResult } | undefined> {
  const { upstream } = pool;
  const { taskId, sessionId } = saved;
  const ways = sessionId !== undefined ? (['rejoined', 'new'] as const) : (['new'] as const);
  for (const way of ways) {
    let lease: Lease;
    try {
      lease =
        way === 'rejoined' ? await pool.rejoin(sessionId as string, context.signal) : await pool.lease(context.signal);
    } catch (error) {
      if (context.signal.aborted) throw error;
      throw asTaskError(upstream.name, upstreamTool, upstream.timeoutMs, error);
    }
    const prefix = `${context.taskId}-`;
    const call = attachCall(lease.session, upstream.name, context, (token) => String(token).startsWith(prefix));
    try {
      let task: Task;
      try {
        task = await lease.session.client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema, {
          signal: context.signal,
          timeout: upstream.timeoutMs,
        });
      } catch (error) {
        if (context.signal.aborted) throw error;
        // The server no longer has that session (it answers 404, or 400 as server-everything does): try a new one.
        if (way === 'rejoined' && isTransportFailure(error)) continue;
        if (isUnknownTask(error)) {
          context.log.info('upstream task unknown upstream', { upstreamTaskId: taskId, session: way });
          return undefined;
        }
        if (isTransportFailure(error)) await lease.session.close();
        throw error;
      }
      context.log.info('upstream task resumed', { upstreamTaskId: taskId, status: task.status, session: way });
      const result = await followTask(lease.session, task, context, Date.now() + upstream.timeoutMs);
      await call.progressed();
      // The dead worker's session served its purpose; nobody else will end it.
      if (way === 'rejoined') await lease.session.terminate();
      return { result };
    } catch (error) {
      if (context.signal.aborted) throw error;
      throw asTaskError(upstream.name, upstreamTool, upstream.timeoutMs, error);
    } finally {
      call.detach();
      lease.release();
    }
  }
  return undefined;
}

/**
 * Polls the upstream's task at its pollInterval, and takes its result with tasks/result once it is terminal or needs
 * input (its elicitation or sampling requests arrive on that request and are relayed like any other). A cancelled or
 * timed-out call cancels the upstream task; a worker shutting down or losing its job leaves it running for the next
 * attempt of the job.
 */
async function followTask(
  session: UpstreamSession,
  first: Task,
  context: ToolContext,
  deadline: number,
): Promise<CallToolResult> {
  const { client } = session;
  const { taskId } = first;
  const remaining = () => Math.max(1, deadline - Date.now());
  try {
    let task = first;
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
    const reason = context.signal.aborted ? (context.signal.reason as unknown) : undefined;
    const leftForNextAttempt = reason === AbortReason.Shutdown || reason === AbortReason.LockLost;
    if ((context.signal.aborted && !leftForNextAttempt) || isTimeout(error)) {
      // Best effort, and without the aborted signal: the upstream should stop work nobody waits for.
      await client
        .request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema, { timeout: 5000 })
        .catch(() => undefined);
    }
    throw error;
  }
}

/** The answer to tasks/get for a task the receiver does not know: -32602 (Invalid params), as the spec says. */
function isUnknownTask(error: unknown): boolean {
  return error instanceof McpError && error.code === (SdkErrorCode.InvalidParams as number);
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
