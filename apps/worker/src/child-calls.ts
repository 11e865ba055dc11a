// ctx.callTool (docs/durable-execution.md, "Child tasks"): a running tool starts another tool as a child task of the
// same principal, through the engine's one create path (createTaskFromEntry, as the api's tools/call: the tool's
// catalog entry for its queue, scheduling and retrySafe, audited; its published schema for the arguments; the
// owner's cap), and waits for it on the process's watcher channel as an api replica waits for a task, lending its
// worker slot meanwhile. The child's id is filed in the parent's durable hash in the step that creates it, with the
// digest of the call, so a later attempt of the parent waits for the same child, and a later attempt whose call
// under that key is another one is refused (NonDeterministicCallError) rather than handed another call's result.
import {
  carrierFor,
  createTaskFromEntry,
  type ArgumentValidator,
  type CatalogView,
  type FiledCall,
  type Logger,
  type RateLimiter,
  type TaskService,
  type TaskStore,
  type TraceContext,
} from '@mcp-tasks/engine';
import {
  callDigest,
  ChildTaskError,
  ErrorCode,
  InvalidInputError,
  isTerminal,
  LimitExceededError,
  NonDeterministicCallError,
  TaskKind,
  TaskNotFoundError,
  TaskStatus,
  UnavailableError,
  type CallToolOptions,
  type CallToolResult,
  type TaskRecord,
  type ToolContext,
} from '@mcp-tasks/protocol';
import type { DurableRun } from './durable-run.ts';
import { inChildSpan } from './job-trace.ts';

/** What child calls need from the worker (JobDeps.children). */
export interface ChildCallDeps {
  tasks: TaskService;
  store: TaskStore;
  /** The live tool catalog (started on the first child call: a worker whose tools start none never reads it). */
  catalog: () => Promise<Pick<CatalogView, 'get' | 'refusal'>>;
  arguments: ArgumentValidator;
  /** The audit child logger: a child task is a task created on its principal's behalf (T-AUDIT-1). */
  audit: Logger;
  /** Charges a child's creation to its principal's rate bucket, which the api's requests fill too (T-SEC-3). */
  rates: Pick<RateLimiter, 'admit' | 'chargeOwner' | 'limits'>;
}

/** One attempt's part of a child call: its durable state, its task, its signal and how it lends its slot. */
export interface ChildCallScope {
  run: DurableRun;
  parent: TaskRecord;
  signal: AbortSignal;
  /** Lends the attempt's slot while it waits (wait-budget.ts, one lending however many waits run at once). */
  waits: { enter(): () => void };
  log: Logger;
  trace?: TraceContext | undefined;
}

export function childCaller(deps: ChildCallDeps, scope: ChildCallScope): ToolContext['callTool'] {
  return (name, args, options = {}) => {
    const attributes = {
      'gen_ai.tool.name': name,
      ...(options.key !== undefined ? { 'mcp.call.key': options.key } : {}),
    };
    // The child task's spans join the trace under the call's span.
    return inChildSpan(scope.trace, 'call_tool', attributes, async (span, trace) => {
      const { run } = scope;
      checkTtl(options.ttl, scope.parent);
      const callKey = run.claimCall(name, options.key);
      span?.setAttribute('mcp.call.key', callKey);
      const filed = run.childOf(callKey);
      // Of the call as the tool made it: the same code in another attempt passes the same arguments.
      const digest = callDigest(name, args);
      let childId = filed?.taskId;
      try {
        if (filed?.digest !== undefined && filed.digest !== digest) {
          throw await otherCall(deps, scope, callKey, filed, { tool: name, arguments: args }, options);
        }
        childId ??= (await startChild(deps, { ...scope, trace }, name, args, callKey, digest, options)).taskId;
      } catch (error) {
        run.releaseCall(callKey);
        throw error;
      }
      run.childStarted();
      span?.setAttributes({ 'mcp.child_task.id': childId, 'mcp.call.replayed': filed !== undefined });
      return resultOf(await waitForChild(deps, scope, childId, name), name);
    });
  };
}

/** The refusal of a call whose key an earlier attempt filed for another call (another tool, other arguments). */
async function otherCall(
  deps: ChildCallDeps,
  scope: ChildCallScope,
  callKey: string,
  filed: FiledCall,
  call: { tool: string; arguments: Record<string, unknown> | undefined },
  options: CallToolOptions,
): Promise<NonDeterministicCallError> {
  // The filed call's arguments as its child task keeps them (schema defaults applied), while it lives.
  const details = await deps.store.details(filed.taskId).catch(() => undefined);
  scope.log.warn('child call differs from the call filed under its key', { callKey, childTaskId: filed.taskId });
  return new NonDeterministicCallError(
    scope.parent.taskId,
    callKey,
    { tool: filed.tool ?? '?', taskId: filed.taskId, ...(details ? { arguments: details.arguments } : {}) },
    { tool: call.tool, arguments: call.arguments ?? {} },
    options.key !== undefined,
  );
}

/**
 * A child's ttl comes from the tool's code, unchecked by any schema: anything but a whole number of milliseconds is
 * the tool's mistake, said so (it reached the create script as NaN, which answered a raw Lua error).
 */
function checkTtl(ttl: unknown, parent: TaskRecord): void {
  if (ttl === undefined || (typeof ttl === 'number' && Number.isSafeInteger(ttl) && ttl > 0)) return;
  throw new InvalidInputError(
    `callTool's ttl must be a whole number of milliseconds above 0 (or left out for the rest of the parent's), got ${JSON.stringify(ttl) ?? typeof ttl}`,
    { taskId: parent.taskId },
  );
}

async function startChild(
  deps: ChildCallDeps,
  scope: ChildCallScope,
  name: string,
  args: Record<string, unknown> | undefined,
  callKey: string,
  digest: string,
  options: CallToolOptions,
): Promise<TaskRecord> {
  const { parent, run } = scope;
  const catalog = await deps.catalog();
  // A refused entry is known without reading Redis again; its reason is the publisher's to fix (docs/catalog.md).
  const refusal = catalog.refusal(name);
  if (refusal) {
    throw new UnavailableError(
      `Tool '${name}' cannot be called: its catalog entry is refused (${refusal.reason}); its publisher must fix it`,
    );
  }
  const entry = await catalog.get(name);
  if (!entry) throw new InvalidInputError(`Unknown tool: '${name}' (no live worker serves it)`);
  const admitted = await deps.rates.admit(deps.rates.chargeOwner(parent.owner));
  if (!admitted.ok) {
    const { limit, retryAfterMs } = admitted;
    throw new LimitExceededError(
      'rate_principal',
      limit,
      `Too many task operations by this task's requestor: at most ${limit} per ${deps.rates.limits.windowMs} ms ` +
        `(RATE_LIMIT_PER_PRINCIPAL), child tasks included; retry in ${retryAfterMs} ms`,
      { retryAfterMs },
    );
  }
  const trace = carrierFor(scope.trace);
  const child = await createTaskFromEntry(
    deps.tasks,
    entry,
    {
      kind: TaskKind.Task,
      owner: parent.owner,
      sessionId: parent.sessionId,
      arguments: await deps.arguments.parse(entry, args),
      // What is left of the parent's ttl, unless asked for less: a child never outlives its parent.
      requestedTtl: options.ttl ?? Number.MAX_SAFE_INTEGER,
      expiresBy: parent.createdAt + parent.ttl,
      statusMessage: `Started by task ${parent.taskId}; queued for a worker.`,
      ...(trace ? { trace } : {}),
      parent: {
        taskId: parent.taskId,
        key: callKey,
        attempt: run.fence,
        maxEntries: run.limits.maxEntries,
        digest,
        keyed: options.key !== undefined,
      },
    },
    // A child task is a task created on its principal's behalf (T-AUDIT-1), audited as the api's are.
    { audit: deps.audit, parentTaskId: parent.taskId },
  );
  if (!child.reused)
    scope.log.info('child task started', { childTaskId: child.taskId, childTool: child.tool, callKey });
  return child;
}

/** Waits for the child's end without holding the attempt's worker slot; rejects when the parent's run stops. */
async function waitForChild(
  deps: ChildCallDeps,
  scope: ChildCallScope,
  childId: string,
  tool: string,
): Promise<TaskRecord> {
  const { tasks, store } = deps;
  const { parent, signal } = scope;
  const gone = () =>
    new ChildTaskError(childId, tool, 'gone', {
      code: ErrorCode.InternalError,
      message: 'the child task expired or was deleted before it ended',
    });
  // The waiter first, then a read that names this process as a waiter of the child (its changes are published on
  // the process's channel from then on): no change slips between the two. Later reads are plain (TaskService.reread).
  const waiter = await tasks.watch(childId);
  const release = scope.waits.enter();
  try {
    const first = await store.getOwned(childId, parent.owner, tasks.watcherId);
    if (!first) throw gone();
    if (isTerminal(first.status)) return first;
    const read = () =>
      tasks.reread(childId, parent.owner).catch((error: unknown) => {
        throw error instanceof TaskNotFoundError ? gone() : error;
      });
    return await tasks.waitFor(childId, { signal, read, first, waiter });
  } finally {
    release();
    await waiter.close();
  }
}

/** The child's CallToolResult (an `isError` one included), or the ChildTaskError of a child that ended without one. */
function resultOf(child: TaskRecord, tool: string): CallToolResult {
  const outcome = child.outcome;
  if (outcome && 'result' in outcome) return outcome.result as CallToolResult;
  const error = outcome?.error ?? {
    code: ErrorCode.InternalError,
    message: child.statusMessage ?? `the child task ended ${child.status}`,
  };
  throw new ChildTaskError(child.taskId, tool, child.status === TaskStatus.Cancelled ? 'cancelled' : 'failed', error);
}
