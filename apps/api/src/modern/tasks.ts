// The tasks extension's methods (X-GET-*, X-UPD-*, X-CAN-*): tasks/get with what the status carries inlined,
// tasks/update routing each answer to the waiting worker, tasks/cancel with its empty ack. Each request is gated on
// its own declaration of the extension (X-ERR-2), before the task is looked up.
import {
  ErrorCode,
  inputRequestOf,
  isTerminal,
  modernDetailedTask,
  ModernErrorCode,
  parseParams,
  ProtocolError,
  TASKS_EXTENSION,
  parseTaskId,
  TaskKind,
  TaskNotFoundError,
  type InputRequest,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import type { ApiServices } from '../context.ts';
import { declaresTasks, type Caller, type ModernContext, type ModernHandler } from './context.ts';

const EMPTY_ACK = { resultType: 'complete' } as const;

/** At most this many answers in one tasks/update (the body cap bounds their size). */
const MAX_INPUT_RESPONSES = 64;

const UpdateParamsSchema = z.looseObject({
  taskId: z.string().min(1).max(256),
  inputResponses: z.record(z.string().max(256), z.unknown()),
});

export const getTask: ModernHandler = async (params, context) => {
  requireExtension(context, 'tasks/get');
  const taskId = parseTaskId(params, 'tasks/get');
  const record = await readTask(context.services, taskId, context.caller);
  return modernDetailedTask(record, await outstandingInputs(context.services, record));
};

export const updateTask: ModernHandler = async (params, context) => {
  requireExtension(context, 'tasks/update');
  const { taskId, inputResponses } = parseParams(UpdateParamsSchema, params, 'tasks/update');
  const record = await readTask(context.services, taskId, context.caller);
  const entries = Object.entries(inputResponses);
  if (entries.length > MAX_INPUT_RESPONSES) {
    throw new ProtocolError(
      ErrorCode.InvalidParams,
      `Too many inputResponses: at most ${MAX_INPUT_RESPONSES} in one tasks/update`,
    );
  }
  await answerInputs(context, record, entries);
  return EMPTY_ACK;
};

export const cancelTask: ModernHandler = async (params, context) => {
  requireExtension(context, 'tasks/cancel');
  const taskId = parseTaskId(params, 'tasks/cancel');
  const { services, log } = context;
  const record = await readTask(services, taskId, context.caller);
  // A task that already ended gets the same ack (X-CAN-2): cancellation is a wish, not a command.
  if (isTerminal(record.status)) return EMPTY_ACK;
  await services.tasks.cancel(record).catch((error: unknown) => {
    if (error instanceof TaskNotFoundError) throw error;
    if (!(error instanceof ProtocolError)) throw error;
    // It ended between the read and the move: ack as for a terminal task.
  });
  log.info('task cancelled', { taskId, tool: record.tool, owner: record.owner });
  return EMPTY_ACK;
};

/**
 * Routes each answer to the worker waiting for it (any replica: the request lives in Redis) and withdraws the
 * answered request from the task's outstanding ones in the same request, so the next tasks/get no longer shows it
 * (X-UPD-5). Unknown, answered or superseded keys and malformed values are ignored.
 */
export async function answerInputs(
  context: Pick<ModernContext, 'services' | 'log'>,
  record: TaskRecord,
  entries: [string, unknown][],
): Promise<void> {
  const { services } = context;
  const target = { sessionId: record.sessionId, owner: record.owner };
  const requestIds = new Map<string, string>();
  for (const pending of await services.events.pendingInputs(record.sessionId)) {
    if (pending.taskId === record.taskId) requestIds.set(pending.key ?? pending.requestId, pending.requestId);
  }
  for (const [key, value] of entries) {
    const requestId = requestIds.get(key);
    if (requestId === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const verdict = await services.inputs.answer(target, requestId, { result: value as Record<string, unknown> });
    if (verdict === 'accepted') await services.events.withdrawInput(record.sessionId, requestId);
    context.log.debug('input answered', { taskId: record.taskId, key, verdict });
  }
}

/** The task's input requests still waiting for an answer, keyed by their ids (unique for the task's life). */
export async function outstandingInputs(
  services: ApiServices,
  record: TaskRecord,
): Promise<Record<string, InputRequest>> {
  const inputs: Record<string, InputRequest> = {};
  for (const pending of await services.events.pendingInputs(record.sessionId)) {
    if (pending.taskId !== record.taskId) continue;
    const request = inputRequestOf(pending.message);
    if (request) inputs[pending.key ?? pending.requestId] = request;
  }
  return inputs;
}

/**
 * The caller's task, or -32602 for one that does not exist, expired or is not theirs (T-SEC-1, X-SEC-2). With
 * authentication a task is its principal's; without, its unguessable id is the capability, for tasks created
 * without authentication only.
 */
export async function readTask(
  services: ApiServices,
  taskId: string,
  caller: Caller,
  /** Register this replica as a waiter for the task's changes (a listen stream): its channel then wakes it. */
  watch = false,
): Promise<TaskRecord> {
  if (caller.authenticated) return services.tasks.getOwned(taskId, caller.owner, { watch });
  const record = await services.store.get(taskId);
  if (!record || record.kind !== TaskKind.Task || !record.owner.startsWith(ANONYMOUS_OWNER_PREFIX)) {
    throw new TaskNotFoundError();
  }
  if (!watch) return record;
  return services.tasks.getOwned(taskId, record.owner, { watch });
}

export const ANONYMOUS_OWNER_PREFIX = 'anonymous:';

function requireExtension(context: ModernContext, method: string): void {
  if (declaresTasks(context.request.clientCapabilities)) return;
  throw new ProtocolError(
    ModernErrorCode.MissingRequiredClientCapability,
    `${method} needs the '${TASKS_EXTENSION}' extension declared in this request's clientCapabilities`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}
