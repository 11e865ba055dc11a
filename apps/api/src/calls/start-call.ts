// tools/call, whichever wire it came in on: the tool and how it may run (T-TOOL-*, X-NEG-*), the arguments' size
// and schema, its webhook, then the record and its job, written in one step (invariant 2) and audited (T-AUDIT-1). What differs
// between the wires — how the answer is given — is theirs; what a call does is here, once.
import {
  audit,
  AuditEvent,
  createTaskFromEntry,
  createWatchedTaskFromEntry,
  SecurityEvent,
  type CreatedTask,
  type CreateTaskInput,
  type EntryTaskInput,
  type Waiter,
} from '@mcp-tasks/engine';
import {
  callDigest,
  LimitExceededError,
  TaskKind,
  TaskSupport,
  TaskSupportError,
  type CatalogEntry,
  type JsonRpcId,
  type WebhookTarget,
} from '@mcp-tasks/protocol';
import { ensureOpened } from './admission.ts';
import { requestKeyOf } from './plain-calls.ts';
import { webhookOf } from './webhooks.ts';
import type { CallContext, CallRequest, Execution } from './request.ts';

/** A call whose tool, way of running and arguments passed every check: nothing is written yet. */
export interface PreparedCall {
  request: CallRequest;
  tool: CatalogEntry;
  asTask: boolean;
  /** The arguments as validated, the schema's defaults applied. */
  arguments: unknown;
  /** Where the task is posted when it changes (calls/webhooks.ts). */
  webhook?: WebhookTarget;
}

/**
 * A call that was admitted: its record (a task, or a plain call the client never sees) and its tool's entry; or, for
 * a task call whose idempotency key names a live task of the caller's already, that task as it is now (`reused`).
 */
export interface StartedCall {
  record: CreatedTask;
  tool: CatalogEntry;
  asTask: boolean;
  /**
   * With `watch`: a waiter on the record's wake-ups, open before it was written and named among its waiters by the
   * step that wrote it (TaskService.createWatched): the caller waits without reading first, and closes it.
   */
  waiter?: Waiter;
}

/**
 * The checks of a call, in the order clients see their errors: the tool (unknown: InvalidInputError), the wire's
 * own checks, how it may run (TaskSupportError), the arguments' size (LimitExceededError) and schema
 * (InvalidInputError). Writes nothing, so that a wire may take what a call will hold (a stream slot) in between.
 */
export async function prepareCall(context: CallContext, request: CallRequest): Promise<PreparedCall> {
  const { services } = context;
  const tool = await services.tools.get(request.tool);
  request.admitTool?.(tool);
  const asTask = runsAsTask(tool, request.execution, request.handles?.requiredTools === true);
  const size = argumentsSize(request.arguments);
  if (size > services.config.MAX_ARGUMENTS_BYTES) await refuseArguments(context, request, size);
  const args = await services.tools.parseArguments(tool, request.arguments, size);
  // A plain call its client follows with task handles may become a task (handed out): it may name a webhook too.
  const mayBecomeTask = asTask || (request.handles !== undefined && tool.taskSupport !== TaskSupport.Forbidden);
  const webhook = await webhookOf(context, request, mayBecomeTask);
  return { request, tool, asTask, arguments: args, ...(webhook ? { webhook } : {}) };
}

/** Writes the prepared call's record and its job in one step (invariant 2), audited; nothing for a refused one. */
export async function startCall(
  context: CallContext,
  prepared: PreparedCall,
  options: { watch?: boolean; filed?: JsonRpcId } = {},
): Promise<StartedCall> {
  const { request, tool, asTask } = prepared;
  const { client } = request;
  const input: EntryTaskInput = {
    kind: asTask ? TaskKind.Task : TaskKind.PlainToolCall,
    owner: context.caller.owner,
    sessionId: client.id,
    arguments: prepared.arguments,
    ...(request.requestedTtl !== undefined ? { requestedTtl: request.requestedTtl } : {}),
    // A 2026 request's context has no stream once its answer is sent: a task's progress would have nowhere to go.
    ...(request.progressToken !== undefined && !(asTask && client.kind === 'request')
      ? { progressToken: request.progressToken }
      : {}),
    ...(request.trace ? { trace: request.trace } : {}),
    // The worker reads a 2026 request's capabilities where it reads a session's: stored by the step that writes the
    // record and its job, so a refused call leaves none behind.
    ...(client.kind === 'request'
      ? { requestContext: { ...client, owner: context.caller.owner, createdAt: Date.now() } }
      : {}),
    ...idempotencyOf(context, prepared),
    ...(prepared.webhook ? { webhook: prepared.webhook } : {}),
    // A 2025-11-25 plain call is filed under its request id by the step that writes it (notifications/cancelled).
    ...(options.filed !== undefined && !asTask ? { filed: requestKeyOf(options.filed) } : {}),
  };
  // The create script opens the request in its step when the transport left that to it (RequestOpening); a plain
  // call that had to open it first (to hold a stream slot) finds it opened.
  const { record, waiter } = await createAudited(context, tool, input, request.opening, options.watch === true);
  return { record, tool, asTask, ...(waiter ? { waiter } : {}) };
}

/**
 * The idempotency key's part of a task call's creation. A call that is not a task keeps no key: its result is its
 * answer and is kept nowhere once sent, so there would be nothing to answer a retry with (docs/durable-execution.md).
 */
function idempotencyOf(context: CallContext, prepared: PreparedCall): Pick<CreateTaskInput, 'idempotency'> {
  const key = prepared.request.idempotencyKey;
  if (key === undefined || !prepared.asTask) return {};
  const digest = callDigest(prepared.tool.name, prepared.arguments);
  const maxKeys = context.services.config.IDEMPOTENCY_KEYS_PER_PRINCIPAL;
  // Where a task id is the task's capability (2026-07-28 without authentication) a refusal must not hand one out.
  return { idempotency: { key, digest, maxKeys, namesTask: !context.caller.readsByCapability } };
}

/**
 * Whether the call runs as a task, or the TaskSupportError its tool's taskSupport gives the request. A tool that
 * requires a task runs as a plain call for a caller that may get a handle for it (`plainRequired`).
 */
function runsAsTask(tool: CatalogEntry, execution: Execution, plainRequired: boolean): boolean {
  const support = tool.taskSupport;
  if (execution === 'task-if-allowed') return support !== TaskSupport.Forbidden;
  if (execution === 'task' && support === TaskSupport.Forbidden) throw new TaskSupportError(tool.name, 'forbidden');
  if (execution === 'plain' && support === TaskSupport.Required && !plainRequired)
    throw new TaskSupportError(tool.name, 'required');
  return execution === 'task';
}

/**
 * Writes the record and its job, audited (the engine's createTaskFromEntry, as a child call's); audits the refusal at
 * the owner's cap, an access of this request refused.
 */
async function createAudited(
  context: CallContext,
  tool: CatalogEntry,
  input: EntryTaskInput,
  opening: CallRequest['opening'],
  watch: boolean,
): Promise<{ record: CreatedTask; waiter?: Waiter | undefined }> {
  const { services, caller } = context;
  const requester = {
    audit: services.security.audit,
    requestId: caller.requestId,
    ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
  };
  const create = watch
    ? createWatchedTaskFromEntry(services.tasks, tool, input, requester, opening)
    : createTaskFromEntry(services.tasks, tool, input, requester, opening).then((record) => ({ record }));
  const created = await create.catch((error: unknown) => {
    if (error instanceof LimitExceededError) {
      audit(services.security.audit, AuditEvent.AccessRejected, {
        reason: 'too_many_tasks',
        principal: caller.owner,
        ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
        requestId: caller.requestId,
        tool: tool.name,
        address: caller.address,
      });
      services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
    }
    throw error;
  });
  context.span?.setAttribute('mcp.task.id', created.record.taskId);
  return created;
}

/**
 * Arguments are stored with the task and sent to a worker: they get their own cap, below the body's
 * (MAX_ARGUMENTS_BYTES). Their size when over it; undefined within it (nothing to wait for then).
 */
function argumentsSize(args: unknown): number {
  return Buffer.byteLength(JSON.stringify(args ?? {}), 'utf8');
}

async function refuseArguments(context: CallContext, request: CallRequest, size: number): Promise<never> {
  const { services, caller } = context;
  const max = services.config.MAX_ARGUMENTS_BYTES;
  // Audited and counted only for a request that is admitted (its opening may not have run yet).
  await ensureOpened(request.opening);
  audit(services.security.audit, AuditEvent.AccessRejected, {
    reason: 'arguments_too_large',
    principal: caller.owner,
    ...(caller.sessionId !== undefined ? { sessionId: caller.sessionId } : {}),
    requestId: caller.requestId,
    address: caller.address,
  });
  services.security.rates.count(SecurityEvent.LimitExceeded).catch(() => undefined);
  throw new LimitExceededError(
    'arguments_bytes',
    max,
    `Arguments too large: ${size} bytes of JSON, at most ${max} allowed (MAX_ARGUMENTS_BYTES)`,
    { size },
  );
}
