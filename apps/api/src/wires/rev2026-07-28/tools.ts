// server/discover, tools/list and tools/call on the 2026-07-28 wire. A call runs on a worker exactly as a legacy
// one does (calls/start-call.ts: the same records, jobs, scheduling, limits and audit); what differs is how it is
// answered: a task (CreateTaskResult, only when this request declared the extension), or synchronously, where a
// tool's input request becomes an MRTR InputRequiredResult whose signed requestState lets the retry resume the same
// waiting tool on any replica.
import { carrierFor } from '@mcp-tasks/engine';
import {
  parseCallToolParams,
  isTerminal,
  modernCreateTaskResult,
  MODERN_PROTOCOL_VERSION,
  MODERN_PROTOCOL_VERSIONS,
  ModernMeta,
  plainResultOf,
  TASKS_EXTENSION,
  TaskKind,
  usedClientCapabilities,
  boundedClientInfo,
  handleStartedResult,
  handleStatusResult,
  type HandleTool,
  InvalidInputError,
  parseHandleArguments,
  resultOf,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { randomUUID } from 'node:crypto';
import { awaitTask } from '../../calls/await-task.ts';
import { idempotencyKeyOf } from '../../calls/idempotency.ts';
import { webhookMetaOf } from '../../calls/webhooks.ts';
import { runHandleTool } from '../../calls/handles.ts';
import { answerTaskInputs } from '../../calls/inputs.ts';
import type { CallRequest } from '../../calls/request.ts';
import { prepareCall, startCall, type PreparedCall } from '../../calls/start-call.ts';
import { SERVER_INFO } from '../../server-info.ts';
import { constantMethod, wireMethod } from '../method-table.ts';
import { callContextOf, declaresTasks, type ModernContext, type ModernReply } from './context.ts';
import { checkParamHeaders, paramHeadersOf } from './param-headers.ts';
import { argumentsDigest } from '../../request-state.ts';

/** How long a client may cache discover and tools/list (ms): the catalog changes as workers come and go. */
const LIST_TTL_MS = 0;

/**
 * What discover declares. Prompts and resources are declared with their (empty) lists: the runner serves tools
 * only, and a declared capability must match the handlers (C26-VER-7); the lists carry cache hints (C26-RES-2).
 */
export function serverCapabilities(): Record<string, unknown> {
  return { tools: { listChanged: true }, prompts: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } };
}

/** prompts/get and resources/read: nothing is found (-32602, the 2026 code for a missing resource too). */
export function notFound(method: string, what: string, param: string) {
  return wireMethod<ModernContext, unknown, never, ModernReply>(method, {
    parse: (params) => params?.[param],
    run: (name) => Promise.reject(new InvalidInputError(`Unknown ${what}: '${String(name).slice(0, 256)}'`)),
    render: (never) => never,
  });
}

/** prompts/list, resources/list, resources/templates/list: always empty here. */
export function emptyList(method: string, field: string) {
  return constantMethod<ModernContext, ModernReply>(method, () => ({
    resultType: 'complete',
    [field]: [],
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
  }));
}

export const discover = constantMethod<ModernContext, ModernReply>('server/discover', () => ({
  resultType: 'complete',
  supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
  capabilities: serverCapabilities(),
  instructions:
    'Long-running tools run as tasks on background workers. Declare the io.modelcontextprotocol/tasks ' +
    'extension to receive them as tasks, then poll tasks/get.',
  ttlMs: LIST_TTL_MS,
  cacheScope: 'public',
}));

export const listTools = constantMethod<ModernContext, ModernReply>('tools/list', ({ services }) => {
  const { handles } = services;
  // With task handles on, every request gets the handle tools: tools/list does not vary with what a request declares
  // (C26-MTH-2). A request that declared the extension never gets a handle; the tools serve its tasks all the same.
  const tools = handles.enabled
    ? services.tools.listWithHandles({ names: handles.names, requiredTools: false })
    : services.tools.list();
  return {
    resultType: 'complete',
    // No `execution`: 2026-07-28 has no per-tool task flag; the server decides per request (C26-MTH-3, X-NEG-11).
    tools: tools.map(({ execution: _execution, ...tool }) => tool),
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
  };
});

/** A tools/call as parsed: the call, and the MRTR round it answers when it is a retry (C26-MRTR-2). */
interface ModernCall {
  call: CallRequest;
  retry?: { requestState: unknown; inputResponses: unknown };
}

export const callTool = wireMethod<ModernContext, ModernCall, ModernReply, ModernReply>('tools/call', {
  parse: (params, context) => {
    const call = parseCallToolParams(params);
    const { request } = context;
    const progressToken = call._meta?.progressToken;
    const requestState = params?.['requestState'];
    const idempotencyKey = idempotencyKeyOf(
      context.res.req.headers,
      call._meta,
      context.services.config.IDEMPOTENCY_KEY_MAX_LENGTH,
    );
    return {
      call: {
        client: {
          kind: 'request',
          id: `m-${randomUUID()}`,
          protocolVersion: MODERN_PROTOCOL_VERSION,
          clientCapabilities: usedClientCapabilities(request.clientCapabilities),
          clientInfo: boundedClientInfo(clientInfoOf(request.clientInfo)),
        },
        tool: call.name,
        arguments: call.arguments,
        // Tasks only for a request that declared the extension (X-NEG-1/2); the legacy `task` param means
        // nothing here (X-NEG-10). One that did not gets task handles when they are on, for tools that may run as
        // tasks; one that requires a task is still refused (X-NEG-5).
        execution: declaresTasks(request.clientCapabilities) ? 'task-if-allowed' : 'plain',
        ...(context.services.handles.enabled && !declaresTasks(request.clientCapabilities)
          ? { handles: { requiredTools: false } }
          : {}),
        ...(progressToken !== undefined ? { progressToken } : {}),
        ...(context.trace ? { trace: carrierFor(context.trace) } : {}),
        // Mcp-Param-* mirror the arguments the tool declares with x-mcp-header (C26-HDR-4), checked before anything
        // runs.
        admitTool: (tool) =>
          checkParamHeaders(paramHeadersOf(tool.inputSchema), call.arguments, context.res.req.headers),
        ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
        ...webhookMetaOf(call._meta),
      },
      ...(requestState !== undefined ? { retry: { requestState, inputResponses: params?.['inputResponses'] } } : {}),
    };
  },
  run: async ({ call, retry }, context) => {
    const handleTool = context.services.handles.toolOf(context.services.handles.enabled, call.tool);
    if (handleTool !== undefined) return callHandleTool(context, call, handleTool);
    const prepared = await prepareCall(callContextOf(context), call);
    if (retry) return resumeCall(context, prepared, retry);
    const { record, asTask } = await startCall(callContextOf(context), prepared);
    // A tool that asks first is a task whose first questions go back as MRTR rounds, not yet as a task (X-COMP-1).
    if (!asTask || prepared.tool.inputFirst === true) return answerSynchronously(context, record, prepared, false);
    context.log.debug('task created', { taskId: record.taskId, tool: record.tool, owner: record.owner });
    return modernCreateTaskResult(record);
  },
  render: (reply) => reply,
});

/** An MRTR retry: the call its state names resumes, after this round's answers are routed to it. */
async function resumeCall(
  context: ModernContext,
  prepared: PreparedCall,
  retry: NonNullable<ModernCall['retry']>,
): Promise<ModernReply> {
  const { services, caller } = context;
  const state = await services.requestStates.verify(retry.requestState, expectedState(context, prepared));
  const record = await services.store.get(state.call);
  if (!record || record.owner !== caller.owner || isTerminal(record.status)) {
    throw new InvalidInputError('Invalid requestState: the call it resumes has ended');
  }
  const responses = retry.inputResponses;
  if (typeof responses === 'object' && responses !== null && !Array.isArray(responses)) {
    await answerTaskInputs(context, record, Object.entries(responses as Record<string, unknown>));
  }
  // A task gathering its first answers (inputFirst) is handed over once its tool runs on without the client.
  const handOver = record.kind === TaskKind.Task && declaresTasks(context.request.clientCapabilities);
  return answerSynchronously(context, record, prepared, handOver);
}

/** What a requestState binds: the caller, the tool and the call's arguments (C26-MRTR-5). */
function expectedState(context: ModernContext, prepared: PreparedCall) {
  return { owner: context.caller.owner, tool: prepared.tool.name, args: argumentsDigest(prepared.request.arguments) };
}

/**
 * Waits for a synchronous call: its result once it ends, or an InputRequiredResult while its tool waits for the
 * client (MRTR); with `handOver`, the CreateTaskResult once the tool runs on without its client (the composition's
 * end, X-COMP-1). A call of a client with task handles still running at its deadline is answered with its handle
 * (calls/handles.ts); a request that asked for progress gets keep-alive progress meanwhile (progress-keepalive.ts).
 * A client that closes the request cancels the call (C26-SSE-4).
 */
async function answerSynchronously(
  context: ModernContext,
  record: TaskRecord,
  prepared: PreparedCall,
  handOver: boolean,
): Promise<ModernReply> {
  const { services, requestId } = context;
  // Each request waits HANDLE_AFTER_MS from its own start (an MRTR retry too): it is what its client times out on.
  const handAt =
    record.kind === TaskKind.PlainToolCall
      ? services.handles.deadline(prepared.request.handles !== undefined, prepared.tool, Date.now())
      : undefined;
  const outcome = await awaitTask(services, record.taskId, {
    signal: context.signal,
    // The call's changes come on this replica's channel once a read registered it (getOwned with the watcher id).
    read: () => services.plainCalls.read(record.taskId, record.owner, 'The call expired before it finished'),
    // Never filed under its request id: there is no session to cancel it through.
    plainCall: { record, requestId, filed: false },
    stop: { needsClient: true, handedOver: handOver, ...(handAt !== undefined ? { handAt } : {}) },
    progress: {
      sessionId: record.sessionId,
      forward: (sessionId, cursor) => context.forwardProgress(sessionId, cursor),
      ...(context.keepAlive ? { keepAlive: context.keepAlive } : {}),
    },
  });
  if ('ended' in outcome) return { resultType: 'complete', ...plainResultOf(outcome.ended) };
  if ('handedOut' in outcome)
    return { resultType: 'complete', ...handleStartedResult({ record: outcome.handedOut }, services.handles.names) };
  if ('handedOver' in outcome) return modernCreateTaskResult(outcome.handedOver);
  if ('needsClient' in outcome) {
    const requestState = await services.requestStates.sign({
      call: outcome.needsClient.taskId,
      ...expectedState(context, prepared),
    });
    return { resultType: 'input_required', inputRequests: outcome.inputs, requestState };
  }
  throw new Error(`tools/call: unexpected end of the wait (${Object.keys(outcome).join()})`);
}

/** A handle tool (calls/handles.ts), answered here without a job: a tool result in the 2026-07-28 envelope. */
async function callHandleTool(context: ModernContext, call: CallRequest, tool: HandleTool): Promise<ModernReply> {
  const args = parseHandleArguments(tool, call.tool, call.arguments);
  const outcome = await runHandleTool(callContextOf(context), args, call, context.signal);
  const result =
    'ended' in outcome ? resultOf(outcome.ended) : handleStatusResult(outcome.status, context.services.handles.names);
  return { resultType: 'complete', ...result };
}

function clientInfoOf(info: Record<string, unknown>): { name: string; version: string } {
  return {
    name: typeof info['name'] === 'string' ? info['name'] : 'unknown',
    version: typeof info['version'] === 'string' ? info['version'] : 'unknown',
  };
}

export const SERVER_INFO_META = { [ModernMeta.ServerInfo]: SERVER_INFO };
