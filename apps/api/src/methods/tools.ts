// tools/list and tools/call: tool-level task negotiation (T-TOOL-1..5) and task creation (T-CREATE-1..3); a plain
// call, which still runs on a worker, is handed to PlainCalls (plain-calls.ts).
import {
  audit,
  AuditEvent,
  carrierFor,
  SecurityEvent,
  type CreateTaskInput,
  type RequestOpening,
} from '@mcp-tasks/engine';
import {
  parseCallToolParams,
  ErrorCode,
  MODEL_IMMEDIATE_RESPONSE_META_KEY,
  ProtocolError,
  supportsTasks,
  TaskKind,
  TaskSupport,
  toWireTask,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { MethodHandler, RequestContext } from '../context.ts';
import { holdingSlot } from '../stream-limit.ts';
import { ensureOpened } from '../task-guards.ts';

export const listTools: MethodHandler = (_params, { services }) => Promise.resolve({ tools: services.tools.list() });

export const callTool: MethodHandler = async (params, context) => {
  const { services, session } = context;
  const call = parseCallToolParams(params);
  const tool = await services.tools.get(call.name);
  // A session on a revision without Tasks never saw our tasks capability: its `task` field is ignored (T-TOOL-5).
  const asTask = call.task !== undefined && supportsTasks(session.protocolVersion);
  // A plain call does work before any script that could open the request: it is opened first (task-guards.ts).
  if (!asTask) await ensureOpened(context);
  const support = tool.taskSupport;
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
  const tooLarge = checkArgumentsSize(call.arguments, context);
  if (tooLarge) await tooLarge;
  const args = services.tools.parseArguments(tool, call.arguments);
  const progressToken = call._meta?.progressToken;
  const trace = context.trace ? carrierFor(context.trace) : undefined;
  const create = (kind: TaskKind, opening?: RequestOpening) =>
    createRecord(
      context,
      tool.name,
      {
        kind,
        owner: session.owner,
        sessionId: session.sessionId,
        tool: tool.name,
        arguments: args,
        retrySafe: tool.retrySafe,
        ...(tool.external ? { queue: tool.queue } : {}),
        ...(tool.scheduling !== undefined ? { scheduling: tool.scheduling } : {}),
        ...(call.task?.ttl !== undefined ? { requestedTtl: call.task.ttl } : {}),
        ...(progressToken !== undefined ? { progressToken } : {}),
        ...(trace ? { trace } : {}),
      },
      opening,
    );
  if (!asTask) {
    // Without SSE a plain call blocks its request until the tool ends: it holds a slot as a stream would
    // (stream-limit.ts), taken before anything is queued so that a refused call runs nothing.
    const run = () => services.plainCalls.run(context, create);
    return context.canStream ? run() : holdingSlot(context, run);
  }
  // The create script opens the request in its step when the transport left that to it (RequestOpening).
  const record = await create(TaskKind.Task, context.opening?.opening);
  // The audit record says this at info; a second info line per task is measurable (docs/benchmarks.md).
  // Not even built unless debug is on: the audit record says the same at info (T-AUDIT-1).
  if (services.log.isDebugEnabled())
    context.log.debug('task created', { taskId: record.taskId, tool: tool.name, owner: record.owner, ttl: record.ttl });
  return {
    task: toWireTask(record),
    _meta: {
      [MODEL_IMMEDIATE_RESPONSE_META_KEY]:
        `Started '${tool.name}' as task ${record.taskId}. It runs in the background; ` +
        'its result will be available through tasks/result.',
    },
  };
};

/** Writes the record and its job of a task or a plain call; audits the creation, or the refusal at the owner's cap. */
export async function createRecord(
  context: RequestContext,
  tool: string,
  input: CreateTaskInput,
  opening?: RequestOpening,
): Promise<TaskRecord> {
  const { services, session } = context;
  const record = await services.tasks.create(input, opening).catch((error: unknown) => {
    if (error instanceof ProtocolError && error.code === ErrorCode.LimitExceeded) {
      audit(services.security.audit, AuditEvent.AccessRejected, {
        reason: 'too_many_tasks',
        principal: session.owner,
        sessionId: session.sessionId,
        requestId: context.requestId,
        tool,
        address: context.address,
      });
      services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
    }
    throw error;
  });
  context.span?.setAttribute('mcp.task.id', record.taskId);
  audit(services.security.audit, AuditEvent.TaskCreated, {
    principal: record.owner,
    taskId: record.taskId,
    tool,
    requestId: context.requestId,
    sessionId: session.sessionId,
    kind: record.kind,
    ttl: record.ttl,
  });
  return record;
}

/**
 * Arguments are stored with the task and sent to a worker: they get their own cap, below the body's. Within it,
 * nothing to wait for (undefined, not an async function's promise).
 */
export function checkArgumentsSize(args: unknown, context: RequestContext): Promise<void> | undefined {
  const max = context.services.config.MAX_ARGUMENTS_BYTES;
  const size = Buffer.byteLength(JSON.stringify(args ?? {}), 'utf8');
  return size <= max ? undefined : refuseArguments(size, max, context);
}

async function refuseArguments(size: number, max: number, context: RequestContext): Promise<void> {
  const { services, session, requestId, address } = context;
  // Audited and counted only for a request that is admitted (its opening may not have run yet).
  await ensureOpened(context);
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
