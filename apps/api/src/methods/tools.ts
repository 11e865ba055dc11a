// tools/list and tools/call: tool-level task negotiation (T-TOOL-1..5), task creation (T-CREATE-1..3) and plain
// calls that still run on a worker.
import {
  CallToolParamsSchema,
  ErrorCode,
  MODEL_IMMEDIATE_RESPONSE_META_KEY,
  parseParams,
  plainResultOf,
  ProtocolError,
  supportsTasks,
  TaskKind,
  taskSupportOf,
  TaskSupport,
  toWireTask,
} from '@mcp-tasks/protocol';
import type { MethodHandler, RequestContext } from '../context.ts';

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
  const args = services.tools.parseArguments(tool, call.arguments);
  const progressToken = call._meta?.progressToken;
  const record = await services.tasks.create({
    kind: asTask ? TaskKind.Task : TaskKind.PlainCall,
    owner: session.owner,
    tool: tool.name,
    arguments: args,
    retrySafe: tool.retrySafe ?? true,
    ...(call.task?.ttl !== undefined ? { requestedTtl: call.task.ttl } : {}),
    ...(progressToken !== undefined ? { progressToken } : {}),
  });
  if (asTask) {
    context.log.info('task created', { taskId: record.taskId, tool: tool.name, owner: record.owner, ttl: record.ttl });
    return {
      task: toWireTask(record),
      _meta: {
        [MODEL_IMMEDIATE_RESPONSE_META_KEY]:
          `Started '${tool.name}' as task ${record.taskId}. It runs in the background; ` +
          'its result will be available through tasks/result.',
      },
    };
  }
  return runPlainCall(record.taskId, context);
};

/** Waits for the hidden task of a plain call, answers its result or error, and deletes it. */
async function runPlainCall(taskId: string, { services, signal }: RequestContext): Promise<Record<string, unknown>> {
  const read = async () => {
    const record = await services.store.get(taskId);
    if (!record) throw new ProtocolError(ErrorCode.InternalError, 'The call expired before it finished');
    return record;
  };
  try {
    const record = await services.tasks.waitForTerminal(taskId, signal, read);
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
