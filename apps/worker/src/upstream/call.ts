// One call of an upstream tool on behalf of one task: cancellation, progress, log messages and input requests are
// carried across, the upstream's answer becomes the task's outcome, and a call the connection lost is sent again
// only when that cannot run the tool twice (docs/gateway.md, "When a call fails").
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
import type { CallHooks, InFlightCall, UpstreamConnection } from './connection.ts';
import type { UpstreamConfig } from './config.ts';
import { classifyCallFailure, type CallFailure } from './failures.ts';
import { laneOf } from './lanes.ts';
import { UpstreamUnavailableError, type Lease, type UpstreamPool } from './pool.ts';
import { boundedText, knownSecrets, maskKnown, redactKnown, upstreamText } from './redact.ts';

/** An upstream tool as the gateway calls it. */
export interface UpstreamTool {
  /** Its name upstream (without our prefix). */
  name: string;
  /** A call that may have started upstream may be sent again: the tool is declared read-only or idempotent. */
  resendable: boolean;
  /** The upstream runs it as a 2025-11-25 task of its own: call it task-augmented and follow that task. */
  asTask: boolean;
}

const DEFAULT_POLL_INTERVAL_MS = 1000;
const MIN_POLL_INTERVAL_MS = 100;

export async function callUpstreamTool(
  pool: UpstreamPool,
  tool: UpstreamTool,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<CallToolResult> {
  const resumePoint = resumePointOf(context);
  const saved = resumePoint?.upstreamTask;
  if (saved !== undefined) {
    const resumed = await resumeOrRefuse(pool, tool, saved, context);
    if (resumed) return resumed;
  }
  const { upstream } = pool;
  const lane = await laneOf(upstream, context);
  const resent = { unsent: false, cut: false };
  for (;;) {
    const lease = await acquire(pool, () => pool.acquire(lane, context.signal), tool, context);
    const call = lease.connection.begin(hooksOf(upstream.name, context), context.signal);
    try {
      // The progressToken makes the upstream report progress; it becomes the task's progress.
      const params = { name: tool.name, arguments: args, _meta: { progressToken: call.progressToken } };
      const result = tool.asTask
        ? await followUpstreamTask(lease.connection, call, params, context, resumePoint)
        : await call.request(
            lease.connection.client.request({ method: 'tools/call', params }, CallToolResultSchema, {
              signal: call.signal,
              timeout: upstream.timeoutMs,
            }),
          );
      await call.progressed();
      return result;
    } catch (error) {
      if (context.signal.aborted) throw error;
      let failure = classifyCallFailure(error, lease.connection.ended);
      if (failure.kind === 'answered') throw asTaskError(upstream, tool.name, error);
      // Once the upstream created its task, the call had started, whatever the transport answers now.
      if (failure.kind === 'unsent' && call.upstreamTaskId !== undefined) failure = { kind: 'cut', how: failure.how };
      await lease.discard();
      const again = failure.kind === 'unsent' ? !resent.unsent : tool.resendable && !resent.cut;
      if (!again) throw lostCallError(upstream.name, tool, failure, resent.unsent || resent.cut);
      resent[failure.kind] = true;
      context.log.warn('upstream call sent again on a fresh connection', {
        upstream: upstream.name,
        how: failure.how,
        reachedUpstream: failure.kind === 'cut',
      });
    } finally {
      call.end();
      lease.release();
    }
  }
}

/** A lease of a connection, or the task's error saying that the upstream is unavailable and why. */
async function acquire(
  pool: UpstreamPool,
  lease: () => Promise<Lease>,
  tool: UpstreamTool,
  context: ToolContext,
): Promise<Lease> {
  try {
    return await lease();
  } catch (error) {
    if (context.signal.aborted || !(error instanceof UpstreamUnavailableError)) throw error;
    throw new ProtocolError(ErrorCode.InternalError, `${error.message}.`, {
      upstream: pool.upstream.name,
      tool: tool.name,
    });
  }
}

/** The task's error for a call the connection lost, in our words. */
function lostCallError(upstream: string, tool: UpstreamTool, failure: CallFailure, sentAgain: boolean): ProtocolError {
  const how = failure.kind === 'answered' ? 'failed' : failure.how;
  const data = { upstream, tool: tool.name };
  if (failure.kind === 'unsent') {
    return new ProtocolError(
      ErrorCode.InternalError,
      `upstream '${upstream}' ${how} before the call of '${tool.name}' reached it, also on a fresh connection.`,
      data,
    );
  }
  const why = sentAgain
    ? 'it had been sent again once already'
    : `it was not sent again because '${tool.name}' is not declared read-only or idempotent`;
  return new ProtocolError(
    ErrorCode.InternalError,
    `upstream '${upstream}' ${how} during the call of '${tool.name}'; ${why}.`,
    data,
  );
}

/** Where the upstream's requests and notifications that belong to the call go: the task's context. */
function hooksOf(upstream: string, context: ToolContext): CallHooks {
  return {
    elicit: (params) => context.elicit(params as never),
    sample: (params) => context.sample(params),
    log: (level, data, logger) => {
      const fields = { upstream, upstreamLevel: level, data, ...(logger ? { logger } : {}) };
      if (level === 'debug' || level === 'info' || level === 'notice') context.log.info('upstream log', fields);
      else if (level === 'warning') context.log.warn('upstream log', fields);
      else context.log.error('upstream log', fields);
    },
    progress: (progress, total, message) => context.progress(progress, total, message),
  };
}

/**
 * An earlier attempt of this job (its worker died, or handed the job back) created an upstream task: follow it
 * rather than call the tool again, whatever the tool's declarations say, since the tool is not run twice. Undefined
 * when the upstream no longer knows it and the tool may be called again; the task's error when it may not.
 */
async function resumeOrRefuse(
  pool: UpstreamPool,
  tool: UpstreamTool,
  saved: UpstreamTaskRef,
  context: ToolContext,
): Promise<CallToolResult | undefined> {
  const { upstream } = pool;
  const resumed = saved.upstream === upstream.name ? await resumeUpstreamTask(pool, tool, saved, context) : undefined;
  if (resumed) return resumed.result;
  // The upstream no longer knows it (a restart, an expiry): as after any crash, the tool runs again only when it
  // cannot do harm.
  const cause = `The worker that called '${tool.name}' on upstream '${upstream.name}' stopped, and the upstream no longer knows its task ${saved.taskId}`;
  if (!tool.resendable) {
    throw new ProtocolError(
      ErrorCode.InternalError,
      `${cause}; it was not run again because '${tool.name}' is not declared read-only or idempotent.`,
      { upstream: upstream.name, tool: tool.name, upstreamTaskId: saved.taskId },
    );
  }
  context.log.warn('upstream task unknown upstream: calling the tool again (read-only or idempotent)', {
    upstream: upstream.name,
    upstreamTaskId: saved.taskId,
  });
  return undefined;
}

/**
 * Calls the tool task-augmented and follows the upstream's task. Over HTTP the task is stored on our job first, so
 * that another worker can follow it should this one die (a stdio upstream dies with us: nothing to resume there).
 */
async function followUpstreamTask(
  connection: UpstreamConnection,
  call: InFlightCall,
  params: Record<string, unknown>,
  context: ToolContext,
  resumePoint: ResumePoint | undefined,
): Promise<CallToolResult> {
  const { timeoutMs } = connection.upstream;
  const deadline = Date.now() + timeoutMs;
  const created = await call.request(
    connection.client.request(
      { method: 'tools/call', params: { ...params, task: { ttl: timeoutMs } } },
      CreateTaskResultSchema,
      { signal: call.signal, timeout: timeoutMs },
    ),
  );
  const taskId = created.task.taskId;
  call.upstreamTaskId = taskId;
  context.log.info('upstream task created', { upstreamTaskId: taskId });
  if (resumePoint && connection.upstream.url !== undefined) {
    const sessionId = connection.httpSessionId;
    await resumePoint.saveUpstreamTask({
      upstream: connection.upstream.name,
      taskId,
      ...(sessionId !== undefined ? { sessionId } : {}),
    });
  }
  return followTask(connection, call, created.task, context, deadline);
}

/**
 * Follows the task an earlier attempt of this job created upstream: first on the HTTP session that created it
 * (servers such as server-everything keep their tasks per session), then, when that session is gone, on a new one
 * (a server that keeps tasks beyond a session, as the spec allows without an authorization context, or binds them to
 * the authorization context our headers carry). Undefined when the upstream answers that it does not know the task.
 */
async function resumeUpstreamTask(
  pool: UpstreamPool,
  tool: UpstreamTool,
  saved: UpstreamTaskRef,
  context: ToolContext,
): Promise<{ result: CallToolResult } | undefined> {
  const { upstream } = pool;
  const { taskId, sessionId } = saved;
  const ways = sessionId !== undefined ? (['rejoined', 'new'] as const) : (['new'] as const);
  const lane = await laneOf(upstream, context);
  for (const way of ways) {
    const lease = await acquire(
      pool,
      () =>
        way === 'rejoined'
          ? pool.rejoin({ sessionId: sessionId as string }, context.signal)
          : pool.acquire(lane, context.signal),
      tool,
      context,
    );
    const call = lease.connection.begin(hooksOf(upstream.name, context), context.signal);
    call.upstreamTaskId = taskId;
    try {
      let task: Task;
      try {
        task = await call.request(
          lease.connection.client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema, {
            signal: call.signal,
            timeout: upstream.timeoutMs,
          }),
        );
      } catch (error) {
        if (context.signal.aborted) throw error;
        const failure = classifyCallFailure(error, lease.connection.ended);
        // The server no longer has that session (it answers 404, or 400 as server-everything does): try a new one.
        if (way === 'rejoined' && failure.kind === 'unsent') continue;
        if (isUnknownTask(error)) {
          context.log.info('upstream task unknown upstream', { upstreamTaskId: taskId, session: way });
          return undefined;
        }
        if (failure.kind !== 'answered') await lease.discard();
        throw error;
      }
      context.log.info('upstream task resumed', { upstreamTaskId: taskId, status: task.status, session: way });
      const result = await followTask(lease.connection, call, task, context, Date.now() + upstream.timeoutMs);
      await call.progressed();
      // The dead worker's session served its purpose; nobody else will end it.
      if (way === 'rejoined') await lease.connection.terminate();
      return { result };
    } catch (error) {
      if (context.signal.aborted) throw error;
      throw asTaskError(upstream, tool.name, error);
    } finally {
      call.end();
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
  connection: UpstreamConnection,
  call: InFlightCall,
  first: Task,
  context: ToolContext,
  deadline: number,
): Promise<CallToolResult> {
  const { client } = connection;
  const { taskId } = first;
  const remaining = () => Math.max(1, deadline - Date.now());
  try {
    let task = first;
    let lastMessage: string | undefined;
    for (;;) {
      if (task.statusMessage !== undefined && task.statusMessage !== lastMessage) {
        lastMessage = task.statusMessage;
        const message = upstreamText(connection.upstream, lastMessage);
        context.log.info('upstream task status', { upstreamTaskId: taskId, status: task.status, message });
      }
      if (['completed', 'failed', 'cancelled', 'input_required'].includes(task.status)) {
        return await call.request(
          client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, {
            signal: call.signal,
            timeout: remaining(),
          }),
        );
      }
      if (Date.now() >= deadline) throw new McpError(SdkErrorCode.RequestTimeout, 'Request timed out');
      const wait = Math.max(MIN_POLL_INTERVAL_MS, task.pollInterval ?? DEFAULT_POLL_INTERVAL_MS);
      await pause(Math.min(wait, remaining()), call.signal);
      task = await call.request(
        client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema, {
          signal: call.signal,
          timeout: remaining(),
        }),
      );
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

/**
 * The upstream's JSON-RPC error is the task's error, as the upstream sent it but for the secrets we sent it, which it
 * may echo (masked), and its message cut to `maxTextBytes` (it becomes the task's statusMessage); the SDK's own
 * failures (a timeout, a transport error) become an internal error that says what happened.
 */
export function asTaskError(
  upstream: Pick<UpstreamConfig, 'name' | 'timeoutMs' | 'headers' | 'env' | 'maxTextBytes'>,
  tool: string,
  error: unknown,
): Error {
  const { name, timeoutMs } = upstream;
  if (error instanceof ProtocolError) return error;
  if (error instanceof McpError) {
    if (error.code === (SdkErrorCode.RequestTimeout as number)) {
      return new ProtocolError(
        ErrorCode.InternalError,
        `upstream '${name}' did not answer the call of '${tool}' within ${timeoutMs} ms (timeoutMs); the call was cancelled upstream.`,
        { upstream: name, tool, timeoutMs },
      );
    }
    const secrets = knownSecrets(upstream);
    const message = boundedText(
      maskKnown(error.message.replace(/^MCP error -?\d+: /, ''), secrets),
      upstream.maxTextBytes,
    );
    return new ProtocolError(error.code, message, redactKnown(error.data, secrets));
  }
  const failure = classifyCallFailure(error, undefined);
  const how = failure.kind === 'answered' ? 'failed' : failure.how;
  return new ProtocolError(ErrorCode.InternalError, `upstream '${name}' ${how} during the call of '${tool}'.`, {
    upstream: name,
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
