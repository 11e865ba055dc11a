// server/discover, tools/list and tools/call on the 2026-07-28 wire. A call runs on a worker exactly as a legacy
// one does (same records, jobs, limits and audit); what differs is how it is answered: a task (CreateTaskResult,
// only when this request declared the extension), or synchronously, where a tool's input request becomes an MRTR
// InputRequiredResult whose signed requestState lets the retry resume the same waiting tool on any replica.
import { randomUUID } from 'node:crypto';
import { carrierFor, type Session } from '@mcp-tasks/engine';
import {
  parseCallToolParams,
  ErrorCode,
  isTerminal,
  modernCreateTaskResult,
  ModernErrorCode,
  ModernMeta,
  MODERN_PROTOCOL_VERSION,
  MODERN_PROTOCOL_VERSIONS,
  plainResultOf,
  ProtocolError,
  TASKS_EXTENSION,
  TaskKind,
  TaskStatus,
  TaskSupport,
  usedClientCapabilities,
  boundedClientInfo,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { RequestContext } from '../context.ts';
import { SERVER_INFO } from '../methods/lifecycle.ts';
import { checkArgumentsSize, createRecord } from '../methods/tools.ts';
import { declaresTasks, type ModernContext, type ModernHandler } from './context.ts';
import { checkParamHeaders, paramHeadersOf } from './param-headers.ts';
import { argumentsDigest } from './request-state.ts';
import { answerInputs, outstandingInputs } from './tasks.ts';

/** How long a client may cache discover and tools/list (ms): the catalog changes as workers come and go. */
const LIST_TTL_MS = 0;
/** How long an MRTR requestState stays valid (the waiting tool gives up after INPUT_REQUEST_TIMEOUT_MS anyway). */
const REQUEST_STATE_TTL_MS = 10 * 60_000;

/**
 * What discover declares. Prompts and resources are declared with their (empty) lists: the runner serves tools
 * only, and a declared capability must match the handlers (C26-VER-7); the lists carry cache hints (C26-RES-2).
 */
export function serverCapabilities(): Record<string, unknown> {
  return { tools: { listChanged: true }, prompts: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } };
}

/** prompts/get and resources/read: nothing is found (-32602, the 2026 code for a missing resource too). */
export function notFound(what: string, param: string): ModernHandler {
  return (params) =>
    Promise.reject(
      new ProtocolError(ErrorCode.InvalidParams, `Unknown ${what}: '${String(params[param]).slice(0, 256)}'`),
    );
}

/** prompts/list, resources/list, resources/templates/list: always empty here. */
export function emptyList(field: string): ModernHandler {
  return () => Promise.resolve({ resultType: 'complete', [field]: [], ttlMs: LIST_TTL_MS, cacheScope: 'public' });
}

export const discover: ModernHandler = () =>
  Promise.resolve({
    resultType: 'complete',
    supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
    capabilities: serverCapabilities(),
    instructions:
      'Long-running tools run as tasks on background workers. Declare the io.modelcontextprotocol/tasks ' +
      'extension to receive them as tasks, then poll tasks/get.',
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
  });

export const listTools: ModernHandler = (_params, { services }) =>
  Promise.resolve({
    resultType: 'complete',
    // No `execution`: 2026-07-28 has no per-tool task flag; the server decides per request (C26-MTH-3, X-NEG-11).
    tools: services.tools.list().map(({ execution: _execution, ...tool }) => tool),
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
  });

export const callTool: ModernHandler = async (params, context) => {
  const { services, request } = context;
  const call = parseCallToolParams(params);
  const tool = await services.tools.get(call.name);
  // Mcp-Param-* mirror the arguments the tool declares with x-mcp-header (C26-HDR-4), checked before anything runs.
  checkParamHeaders(paramHeadersOf(tool.inputSchema), call.arguments, context.res.req.headers);
  const withTasks = declaresTasks(request.clientCapabilities);
  if (tool.taskSupport === TaskSupport.Required && !withTasks) {
    throw new ProtocolError(
      ModernErrorCode.MissingRequiredClientCapability,
      `Tool '${tool.name}' runs only as a task: declare the '${TASKS_EXTENSION}' extension in this request`,
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
  }
  const legacy = stateContext(context);
  const tooLarge = checkArgumentsSize(call.arguments, legacy);
  if (tooLarge) await tooLarge;
  const args = services.tools.parseArguments(tool, call.arguments);
  const expected = { owner: context.caller.owner, tool: tool.name, args: argumentsDigest(call.arguments) };
  const retry = params['requestState'];
  if (retry !== undefined) {
    // An MRTR retry (C26-MRTR-2): resume the call the state names, after routing this round's answers to it.
    const state = await services.requestStates.verify(retry, expected);
    const record = await services.store.get(state.call);
    if (!record || record.owner !== context.caller.owner || isTerminal(record.status)) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid requestState: the call it resumes has ended');
    }
    const responses = params['inputResponses'];
    if (typeof responses === 'object' && responses !== null && !Array.isArray(responses)) {
      await answerInputs(context, record, Object.entries(responses as Record<string, unknown>));
    }
    // A task gathering its first answers (inputFirst) is handed over once its tool runs on without the client.
    return answerSynchronously(context, record, expected, { handOver: record.kind === TaskKind.Task && withTasks });
  }
  // Tasks: only for a request that declared the extension (X-NEG-1/2), for a tool that may run as one. The
  // legacy `task` param means nothing here (X-NEG-10).
  const asTask = withTasks && tool.taskSupport !== TaskSupport.Forbidden;
  // A tool that asks first is a task whose first questions go back as MRTR rounds, not yet as a task (X-COMP-1).
  const gatherFirst = asTask && tool.inputFirst === true;
  const progressToken = call._meta?.progressToken;
  const trace = context.trace ? carrierFor(context.trace) : undefined;
  // The worker reads the request's capabilities where it reads a session's: stored before the job can start.
  await services.sessions.putRequestContext(legacy.session, services.tasks.grantTtl(undefined));
  const record = await createRecord(legacy, tool.name, {
    kind: asTask ? TaskKind.Task : TaskKind.PlainToolCall,
    owner: legacy.session.owner,
    sessionId: legacy.session.sessionId,
    tool: tool.name,
    arguments: args,
    retrySafe: tool.retrySafe,
    ...(tool.external ? { queue: tool.queue } : {}),
    ...(progressToken !== undefined && !asTask ? { progressToken } : {}),
    ...(trace ? { trace } : {}),
  });
  if (!asTask || gatherFirst) return answerSynchronously(context, record, expected, { handOver: false });
  context.log.debug('task created', { taskId: record.taskId, tool: tool.name, owner: record.owner });
  return modernCreateTaskResult(record);
};

/**
 * Waits for a synchronous call: its result once it ends, or an InputRequiredResult while its tool waits for the
 * client (MRTR). A client that closes the request cancels the call (C26-SSE-4).
 */
async function answerSynchronously(
  context: ModernContext,
  record: TaskRecord,
  expected: { owner: string; tool: string; args: string },
  /** Answer CreateTaskResult once the tool runs on (its questions answered, none new): the composition's end. */
  { handOver }: { handOver: boolean },
): Promise<Record<string, unknown>> {
  const { services, signal, requestId } = context;
  const keys = services.store.keys;
  // The call's changes come on this replica's channel once a read registered it (getOwned with the watcher id).
  const waiter = await services.subscriber.waiter(
    await services.tasks.wakeOn(record.taskId),
    keys.sessionChannel(record.sessionId),
  );
  let cursor = '0-0';
  try {
    for (;;) {
      cursor = await context.forwardProgress(record.sessionId, cursor);
      const current = await services.store.getOwned(record.taskId, record.owner, services.tasks.watcherId);
      if (!current) throw new ProtocolError(ErrorCode.InternalError, 'The call expired before it finished');
      if (isTerminal(current.status)) {
        await context.forwardProgress(record.sessionId, cursor);
        await services.plainCalls.delete(current, requestId);
        return { resultType: 'complete', ...plainResultOf(current) };
      }
      if (handOver && current.status === TaskStatus.Working) return modernCreateTaskResult(current);
      if (current.status === TaskStatus.InputRequired) {
        const inputRequests = await outstandingInputs(services, current);
        if (Object.keys(inputRequests).length > 0) {
          const requestState = await services.requestStates.sign({
            call: current.taskId,
            ...expected,
            exp: Date.now() + REQUEST_STATE_TTL_MS,
          });
          return { resultType: 'input_required', inputRequests, requestState };
        }
      }
      if (signal.aborted) throw new ProtocolError(ErrorCode.RequestCancelled, 'The request was cancelled');
      await waiter.next(services.config.RESULT_RECHECK_MS, signal).catch(() => undefined);
    }
  } catch (error) {
    if (signal.aborted) await services.plainCalls.abandon(record, requestId, 'The client closed the request.');
    throw error;
  } finally {
    await waiter.close();
  }
}

/**
 * The request as the shared task code sees it: a context of its own in Redis, shaped as a session, holding only
 * this request's capabilities (the worker reads them there before sending an input request) and the caller as the
 * owner. Its id is never sent to the client.
 */
function stateContext(context: ModernContext): RequestContext & { session: Session } {
  const { services, caller, request } = context;
  const session: Session = {
    sessionId: `m-${randomUUID()}`,
    protocolVersion: MODERN_PROTOCOL_VERSION,
    clientCapabilities: usedClientCapabilities(request.clientCapabilities),
    clientInfo: boundedClientInfo(clientInfoOf(request.clientInfo)),
    createdAt: Date.now(),
    owner: caller.owner,
  };
  return {
    services,
    session,
    requestId: context.requestId,
    signal: context.signal,
    canStream: context.canStream,
    address: caller.address,
    admission: context.admission,
    log: context.log,
  };
}

function clientInfoOf(info: Record<string, unknown>): { name: string; version: string } {
  return {
    name: typeof info['name'] === 'string' ? info['name'] : 'unknown',
    version: typeof info['version'] === 'string' ? info['version'] : 'unknown',
  };
}

export const SERVER_INFO_META = { [ModernMeta.ServerInfo]: SERVER_INFO };
