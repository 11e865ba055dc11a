// ctx.callTool (docs/durable-execution.md, "Child tasks"): a running tool starts another tool as a child task of the
// same principal, through the engine's one create path (the tool's catalog entry for its queue, scheduling and
// retrySafe; its published schema for the arguments; the owner's cap), and waits for it on the process's watcher
// channel as an api replica waits for a task, lending its worker slot meanwhile. The child's id is filed in the
// parent's durable hash in the step that creates it, so a later attempt of the parent waits for the same child.
import {
  audit,
  AuditEvent,
  carrierFor,
  type ArgumentValidator,
  type CatalogView,
  type Logger,
  type TaskService,
  type TaskStore,
  type TraceContext,
} from '@mcp-tasks/engine';
import {
  ChildTaskError,
  ErrorCode,
  InvalidInputError,
  isTerminal,
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

/** What child calls need from the worker (JobDeps.children). */
export interface ChildCallDeps {
  tasks: TaskService;
  store: TaskStore;
  /** The live tool catalog (started on the first child call: a worker whose tools start none never reads it). */
  catalog: () => Promise<Pick<CatalogView, 'get' | 'refusal'>>;
  arguments: ArgumentValidator;
  /** The audit child logger: a child task is a task created on its principal's behalf (T-AUDIT-1). */
  audit: Logger;
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
  return async (name, args, options = {}) => {
    const { run } = scope;
    const callKey = run.claimCall(name, options.key);
    let childId = run.childOf(callKey);
    if (childId === undefined) {
      try {
        childId = (await startChild(deps, scope, name, args, callKey, options)).taskId;
      } catch (error) {
        run.releaseCall(callKey);
        throw error;
      }
    }
    run.childStarted();
    return resultOf(await waitForChild(deps, scope, childId, name), name);
  };
}

async function startChild(
  deps: ChildCallDeps,
  scope: ChildCallScope,
  name: string,
  args: Record<string, unknown> | undefined,
  callKey: string,
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
  const trace = carrierFor(scope.trace);
  const child = await deps.tasks.create({
    kind: TaskKind.Task,
    owner: parent.owner,
    sessionId: parent.sessionId,
    tool: entry.name,
    arguments: await deps.arguments.parse(entry, args),
    retrySafe: entry.retrySafe,
    ...(entry.external ? { queue: entry.queue } : {}),
    ...(entry.scheduling !== undefined ? { scheduling: entry.scheduling } : {}),
    // What is left of the parent's ttl, unless asked for less: a child never outlives its parent.
    requestedTtl: options.ttl ?? Number.MAX_SAFE_INTEGER,
    expiresBy: parent.createdAt + parent.ttl,
    statusMessage: `Started by task ${parent.taskId}; queued for a worker.`,
    ...(trace ? { trace } : {}),
    parent: { taskId: parent.taskId, key: callKey, attempt: run.fence, maxEntries: run.limits.maxEntries },
  });
  if (!child.reused) {
    audit(deps.audit, AuditEvent.TaskCreated, {
      principal: child.owner,
      taskId: child.taskId,
      tool: child.tool,
      parentTaskId: parent.taskId,
      kind: child.kind,
      ttl: child.ttl,
    });
    scope.log.info('child task started', { childTaskId: child.taskId, childTool: child.tool, callKey });
  }
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
