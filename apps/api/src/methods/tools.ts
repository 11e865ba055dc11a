// tools/list and tools/call: tool-level task negotiation (T-TOOL-1..5), task creation (T-CREATE-1..3) and plain
// calls that still run on a worker.
import { audit, AuditEvent, SecurityEvent } from '@mcp-tasks/engine';
import {
  CallToolParamsSchema,
  ErrorCode,
  MODEL_IMMEDIATE_RESPONSE_META_KEY,
  parseParams,
  plainResultOf,
  ProtocolError,
  queueOfTool,
  supportsTasks,
  TaskKind,
  taskSupportOf,
  TaskSupport,
  toWireTask,
} from '@mcp-tasks/protocol';
import { StreamReply, type MethodHandler, type RequestContext } from '../context.ts';

export const listTools: MethodHandler = (_params, { services }) => Promise.resolve({ tools: services.tools.list() });

export const callTool: MethodHandler = async (params, context) => {
  const { services, session } = context;
  const call = parseParams(CallToolParamsSchema, params, 'tools/call');
  const tool = services.tools.get(call.name);
  // A session on a revision without Tasks never saw our tasks capability: its `task` field is ignored (T-TOOL-5).
  const asTask = call.task !== undefined && supportsTasks(session.protocolVersion);
  const support = taskSupportOf(tool);
  if (asTask && support === TaskSupport.Forbidden) {
    throw new ProtocolError(
      ErrorCode.MethodNotFound,
      `Tool '${tool.name}' cannot be called as a task (execution.taskSupport is 'forbidden'); call it without params.task`,
    );
  }
  if (!asTask && support === TaskSupport.Required) {
    const remedy = supportsTasks(session.protocolVersion)
      ? 'add params.task'
      : `task-augmented calls need protocol 2025-11-25 (this session negotiated ${session.protocolVersion})`;
    throw new ProtocolError(
      ErrorCode.MethodNotFound,
      `Tool '${tool.name}' must be called as a task (execution.taskSupport is 'required'); ${remedy}`,
    );
  }
  checkArgumentsSize(call.arguments, context);
  const args = services.tools.parseArguments(tool, call.arguments);
  const progressToken = call._meta?.progressToken;
  // A plain call that may stream starts its stream where the session's events stand now, before the task exists
  // (sent first on the connection the record is written on, so Redis reads it first; no round trip of its own).
  const since = !asTask && context.canStream ? services.events.lastId(session.sessionId) : undefined;
  since?.catch(() => undefined); // awaited below; a failed create must not leave it unhandled
  const record = await services.tasks
    .create({
      kind: asTask ? TaskKind.Task : TaskKind.PlainToolCall,
      owner: session.owner,
      sessionId: session.sessionId,
      tool: tool.name,
      arguments: args,
      retrySafe: tool.retrySafe ?? true,
      ...(queueOfTool(tool) !== undefined ? { queue: queueOfTool(tool) } : {}),
      ...(call.task?.ttl !== undefined ? { requestedTtl: call.task.ttl } : {}),
      ...(progressToken !== undefined ? { progressToken } : {}),
    })
    .catch((error: unknown) => {
      if (error instanceof ProtocolError && error.code === ErrorCode.LimitExceeded) {
        audit(services.security.audit, AuditEvent.AccessRejected, {
          reason: 'too_many_tasks',
          principal: session.owner,
          sessionId: session.sessionId,
          requestId: context.requestId,
          tool: tool.name,
          address: context.address,
        });
        services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
      }
      throw error;
    });
  audit(services.security.audit, AuditEvent.TaskCreated, {
    principal: record.owner,
    taskId: record.taskId,
    tool: tool.name,
    requestId: context.requestId,
    sessionId: session.sessionId,
    kind: record.kind,
    ttl: record.ttl,
  });
  if (asTask) {
    // The audit record above says this at info; a second info line per task is measurable (docs/benchmarks.md).
    context.log.debug('task created', { taskId: record.taskId, tool: tool.name, owner: record.owner, ttl: record.ttl });
    return {
      task: toWireTask(record),
      _meta: {
        [MODEL_IMMEDIATE_RESPONSE_META_KEY]:
          `Started '${tool.name}' as task ${record.taskId}. It runs in the background; ` +
          'its result will be available through tasks/result.',
      },
    };
  }
  await services.tasks.rememberPlainCall(record, context.requestId);
  // A plain call answers on its own request: as JSON when it ends soon, else streamed with its progress and input
  // requests from the start (as tasks/result does, RESULT_STREAM_AFTER_MS); without SSE, as JSON after the wait.
  if (since) {
    const withinMs = services.config.RESULT_STREAM_AFTER_MS;
    const answer = withinMs > 0 ? await runPlainCall(record.taskId, context, { withinMs }) : undefined;
    return answer ?? new StreamReply(record, await since);
  }
  return runPlainCall(record.taskId, context);
};

/** Arguments are stored with the task and sent to a worker: they get their own cap, below the body's. */
function checkArgumentsSize(args: unknown, { services, session, requestId, address }: RequestContext): void {
  const max = services.config.MAX_ARGUMENTS_BYTES;
  const size = Buffer.byteLength(JSON.stringify(args ?? {}), 'utf8');
  if (size <= max) return;
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'arguments_too_large',
    principal: session.owner,
    sessionId: session.sessionId,
    requestId,
    address,
  });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  throw new ProtocolError(
    ErrorCode.LimitExceeded,
    `Arguments too large: ${size} bytes of JSON, at most ${max} allowed (MAX_ARGUMENTS_BYTES)`,
    { limit: 'arguments_bytes', max, size },
  );
}

/**
 * Waits for the hidden task of a plain call, answers its result or error, and deletes it. With `limit`, gives up
 * after `limit.withinMs` or once the call needs its client, answering undefined (the caller streams instead).
 */
function runPlainCall(taskId: string, context: RequestContext): Promise<Record<string, unknown>>;
function runPlainCall(
  taskId: string,
  context: RequestContext,
  limit: { withinMs: number },
): Promise<Record<string, unknown> | undefined>;
async function runPlainCall(
  taskId: string,
  { services, signal }: RequestContext,
  limit?: { withinMs: number },
): Promise<Record<string, unknown> | undefined> {
  const read = async () => {
    const record = await services.store.get(taskId);
    if (!record) throw new ProtocolError(ErrorCode.InternalError, 'The call expired before it finished');
    return record;
  };
  try {
    const record = await services.tasks.waitForTerminal(taskId, signal, read, limit);
    if (!services.tasks.isTerminal(record)) return undefined;
    await services.store.delete(record);
    return plainResultOf(record);
  } catch (error) {
    if (signal.aborted) {
      // The client went away: stop the work it no longer waits for.
      const record = await services.store.get(taskId);
      if (record && !services.tasks.isTerminal(record)) {
        await services.tasks.cancel(record, 'The client closed the request.').catch(() => undefined);
      }
      if (record) await services.store.delete(record);
    }
    throw error;
  }
}
