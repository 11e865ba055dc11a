// The tool-definition API: a tool is declared once and read by the api (tools/list, argument validation,
// task negotiation) and by the worker (execution).
import { z } from 'zod';
import { ErrorCode, ProtocolError } from './jsonrpc.ts';
import { SchedulingSchema, type Scheduling, type SchedulingInput } from './scheduling.ts';
import { describeIssues, type CallToolResult } from './schemas.ts';

export const TaskSupport = { Forbidden: 'forbidden', Optional: 'optional', Required: 'required' } as const;
export type TaskSupport = (typeof TaskSupport)[keyof typeof TaskSupport];

export interface ToolLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface ToolContext {
  taskId: string;
  /**
   * 1 on the first run; one more after each earlier run, however it ended: a failed run that is retried, a crash or a
   * lost lock of the worker running it, a hand-back when that worker shut down. Above 1, this run resumes earlier work
   * (whose side effects may have happened: see `lastCheckpoint` and `step`).
   */
  attempt: number;
  /** Fires when the task is cancelled or the worker shuts down: stop promptly. */
  signal: AbortSignal;
  /** Reports progress; relayed to the client as notifications/progress when it gave a progressToken. */
  progress: (progress: number, total?: number, message?: string) => Promise<void>;
  log: ToolLogger;
  /**
   * Asks the client for input (elicitation/create, form mode only: a `mode` other than 'form' or an `elicitationId`
   * is refused with `input-error`) and resolves with its result, e.g.
   * `{ action: 'accept', content: {...} }`, `{ action: 'decline' }` or `{ action: 'cancel' }`. The task is
   * `input_required` meanwhile. Rejects with a LocalError (`capability-missing`, `input-timeout`, `input-error`) the
   * tool may handle.
   */
  elicit: (params: ElicitParams, options?: InputOptions) => Promise<Record<string, unknown>>;
  /** Asks the client's model for a completion (sampling/createMessage); like `elicit` otherwise. */
  sample: (params: Record<string, unknown>, options?: InputOptions) => Promise<Record<string, unknown>>;
  /** Asks the client for its roots (roots/list; the client must declare `roots`); like `elicit` otherwise. */
  listRoots: (options?: InputOptions) => Promise<Record<string, unknown>>;
  /**
   * Saves `value` (JSON, at most DURABLE_MAX_BYTES) as the task's checkpoint, replacing the last one: a later attempt
   * of the task (after a crash, a lost lock, a timeout or a retry) starts with it as `lastCheckpoint`. Operators see
   * when it was saved and its size. Rejects with a LocalError (`durable-too-large`, `attempt-superseded` once a later
   * attempt runs the task, `task-ended`) the tool may handle. See docs/durable-execution.md.
   */
  checkpoint: (value: unknown) => Promise<void>;
  /** The value the last `checkpoint()` of an earlier attempt saved (as JSON has it); undefined when there is none. */
  readonly lastCheckpoint: unknown;
  /**
   * Runs `fn` once per task to completion: its result (JSON, at most DURABLE_MAX_BYTES) is stored, and a later attempt
   * gets the stored result without running `fn`. A step whose `fn` threw runs again. A name is used once per attempt
   * (`step-name-reused` otherwise; a name whose `fn` threw may be used again). Resolves with the result as JSON has
   * it, also the first time, so that every attempt sees the same value.
   */
  step: <T>(name: string, fn: () => T | Promise<T>, options?: StepOptions) => Promise<T>;
  /**
   * Runs tool `name` as a child task of the same principal, on any worker, and resolves with its CallToolResult (an
   * `isError` result included); rejects with a ChildTaskError carrying the child's JSON-RPC error when it fails or is
   * cancelled. A child call is a step: a later attempt does not start it again but waits for the same child. While
   * the tool waits, its worker slot runs other jobs; cancelling this task cancels its children. See
   * docs/durable-execution.md.
   */
  callTool: (name: string, args?: Record<string, unknown>, options?: CallToolOptions) => Promise<CallToolResult>;
  /**
   * A durable timer: the attempt ends, its worker slot is free, and its job waits in Redis; after `ms` any worker
   * runs the tool again, what it stored (steps, child calls, checkpoint, earlier waits) is replayed, and this call
   * resolves. Rejects with a LocalError `wait-too-long` when the sleep would end after the task expires. See
   * docs/durable-execution.md, "Waits".
   */
  sleep: (ms: number, options?: WaitOptions) => Promise<void>;
  /** `sleep` until a time (a Date or epoch ms); a time past resolves at once. */
  sleepUntil: (at: Date | number, options?: WaitOptions) => Promise<void>;
  /**
   * Waits, parked like a sleep, for an event named `name` sent to this task (`mcpt signal`, the api's
   * `POST /tasks/{taskId}/events/{name}`, another tool's `ctx.signalTask`); an event sent before the wait is kept and
   * consumed by it. Resolves with `{ timedOut: false, data }`, or `{ timedOut: true }` once `timeoutMs` has passed
   * (default: until the task expires).
   */
  waitForEvent: (name: string, options?: WaitForEventOptions) => Promise<EventOutcome>;
  /**
   * Sends event `name` (with `data`, JSON) to a task of the same principal: it wakes the task when it waits for that
   * event, or is kept for its next wait. Not `signal`: that name is the abort signal's. Rejects with a LocalError
   * `task-not-found` (an unknown task, or another principal's), `invalid-state` (the task has ended),
   * `limit-exceeded` (too many events kept, data too large) or `invalid-input` (a bad name). Not a step by itself:
   * wrap it in `step` to send it once per task.
   */
  signalTask: (taskId: string, name: string, data?: unknown) => Promise<SignalOutcome>;
}

/** Options of a step (docs/durable-execution.md, "Steps"). */
export interface StepOptions {
  /**
   * Tries `fn` again after an error (not after a FinalError), with the shape and defaults of a tool's `retry`, e.g.
   * `{ attempts: 3, backoff: { type: 'fixed', delayMs: 500 } }`. The tries are counted for the task, so an attempt
   * cut off mid-way (a crash) goes on counting; the last try's error goes to the tool. Default: one try.
   */
  retry?: SchedulingInput['retry'];
}

/** Options of a sleep. */
export interface WaitOptions {
  /**
   * Names the wait among the task's waits, unique per attempt. Default: its kind and the count of its kind so far in
   * the attempt (`sleep#2`), which names the same wait in every attempt that waits in the same order.
   */
  key?: string;
}

export interface WaitForEventOptions extends WaitOptions {
  /** Give up after this long (ms): resolves `{ timedOut: true }`. Default: when the task expires. */
  timeoutMs?: number;
}

/** What `waitForEvent` resolves with. */
export type EventOutcome = { timedOut: false; data: unknown } | { timedOut: true };

/** What became of a sent event: it woke the task waiting for it (`delivered`), or is kept for its next wait. */
export interface SignalOutcome {
  delivered: boolean;
}

export interface CallToolOptions {
  /**
   * Names the child call among this task's child calls, as a step name does (unique per attempt). Default: the tool's
   * name and the count of its calls so far in this attempt (`summarize#3`), which names the same child in every
   * attempt as long as the tool makes its calls in the same order.
   */
  key?: string;
  /** The child's ttl (ms), at most what is left of this task's; default: what is left of this task's. */
  ttl?: number;
}

/**
 * A child task (ctx.callTool) ended without a result: it failed with a JSON-RPC error, was cancelled, or is gone.
 * It carries the child's error (`code`, `message`, `data`), so that a tool that does not catch it fails with it, and
 * does not retry (the retry would wait for the same child).
 */
export class ChildTaskError extends ProtocolError {
  override readonly name = 'ChildTaskError';
  constructor(
    readonly taskId: string,
    readonly tool: string,
    /** The child's status: `failed`, `cancelled`, or `gone` (expired or deleted). */
    readonly status: string,
    error: { code: number; message: string; data?: unknown },
  ) {
    super(error.code, `Child task ${taskId} (tool '${tool}') ${status}: ${error.message}`, error.data);
  }
}

export interface InputOptions {
  /**
   * A name for the request, unique for the task's life (e.g. `confirm`): 2026-07-28 clients see the request under
   * this key (MRTR `inputRequests`, the tasks extension's `inputRequests`). Default: a generated id.
   */
  key?: string;
  /**
   * Waits for the answer without holding a worker: the attempt ends (the task shows input_required on both wires),
   * and the answer resumes the tool on any worker, with the request and its answer replayed from the record
   * (docs/durable-execution.md, "Waiting for the client"). Give a `key` when the tool asks more than once.
   */
  park?: boolean;
}

export interface ElicitParams {
  message: string;
  requestedSchema: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  title?: string;
  description: string;
  inputSchema: S;
  /** The structured result's schema (MCP `outputSchema`), when the tool returns `structuredContent`. */
  outputSchema?: z.ZodType;
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`, ...), listed as given. */
  annotations?: ToolAnnotations;
  /** Default `forbidden`, as in the specification. */
  taskSupport?: TaskSupport;
  /**
   * Whether running the tool again after a worker crash is harmless (default true). A tool that is not retry-safe
   * fails with a clear statusMessage instead of running twice.
   */
  retrySafe?: boolean;
  /** The most runs of this tool at once across all workers (docs/scheduling.md); default: no limit. */
  concurrency?: SchedulingInput['concurrency'];
  /** The most starts per window across all workers, e.g. `{ max: 10, perMs: 1000 }` (`perMs` default 1000); default: none. */
  rateLimit?: SchedulingInput['rateLimit'];
  /**
   * Runs again after an error the tool throws (not after a FinalError), e.g.
   * `{ attempts: 3, backoff: { type: 'exponential', delayMs: 1000 }, maxDelayMs: 30_000 }`; default: 1 attempt. A
   * field left out takes its default (`{ attempts: 3 }`: exponential from 1 s, at most 60 s).
   */
  retry?: SchedulingInput['retry'];
  /** A run longer than this is aborted (its signal fires) and counts as a failed attempt; default: none. */
  timeoutMs?: SchedulingInput['timeoutMs'];
  /** The most runs of this tool one principal has at once; default: none (MAX_RUNNING_PER_OWNER still applies). */
  maxRunningPerOwner?: SchedulingInput['maxRunningPerOwner'];
  /**
   * The tool asks its questions (elicit, sample, listRoots) before its long work. On the 2026-07-28 wire a call
   * that may become a task first gathers those answers synchronously (MRTR rounds) and becomes a task once they are
   * in (the tasks extension's composition, X-COMP-1). Default false: such a call is a task from the start.
   */
  inputFirst?: boolean;
  run(args: z.infer<S>, context: ToolContext): Promise<CallToolResult>;
}

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

export function defineTool<S extends z.ZodType>(definition: ToolDefinition<S>): ToolDefinition<S> {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(definition.name)) {
    throw new Error(`Tool name '${definition.name}' must be 1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'`);
  }
  declaredScheduling(definition);
  return definition;
}

export interface ToolListing {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  execution: { taskSupport: TaskSupport };
}

export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();
  readonly #listing: ToolListing[];

  constructor(tools: readonly ToolDefinition[]) {
    for (const tool of tools) {
      if (this.#tools.has(tool.name)) throw new Error(`Tool '${tool.name}' is registered twice`);
      this.#tools.set(tool.name, tool);
    }
    // Computed once: tools/list is a hot, constant answer.
    this.#listing = tools.map(listingOf);
  }

  list(): ToolListing[] {
    return this.#listing;
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** The tool, or -32602 naming the unknown tool (the MCP convention for tools/call of an unknown name). */
  get(name: string): ToolDefinition {
    const tool = this.#tools.get(name);
    if (!tool) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown tool: '${name}'`);
    return tool;
  }

  /** Validated arguments with defaults applied, or -32602 saying which argument is wrong. */
  parseArguments(tool: ToolDefinition, args: unknown): unknown {
    const parsed = tool.inputSchema.safeParse(args ?? {});
    if (parsed.success) return parsed.data;
    throw new ProtocolError(
      ErrorCode.InvalidParams,
      `Invalid arguments for tool '${tool.name}': ${describeIssues(parsed.error)}`,
    );
  }
}

/**
 * The scheduling settings a tool's definition declares (docs/scheduling.md), each field a given `retry` or `rateLimit` leaves out filled with its default; throws
 * naming the wrong field (defineTool checks first, so a defined tool does not throw here).
 */
export function declaredScheduling(tool: Pick<ToolDefinition, keyof Scheduling> & { name: string }): Scheduling {
  const declared: SchedulingInput = {
    concurrency: tool.concurrency,
    rateLimit: tool.rateLimit,
    retry: tool.retry,
    timeoutMs: tool.timeoutMs,
    maxRunningPerOwner: tool.maxRunningPerOwner,
  };
  for (const key of Object.keys(declared) as (keyof Scheduling)[])
    if (declared[key] === undefined) delete declared[key];
  const parsed = SchedulingSchema.safeParse(declared);
  if (!parsed.success) {
    throw new Error(`Tool '${tool.name}' has invalid scheduling settings: ${describeIssues(parsed.error)}`);
  }
  return parsed.data;
}

export function taskSupportOf(tool: ToolDefinition): TaskSupport {
  return tool.taskSupport ?? TaskSupport.Forbidden;
}

function listingOf(tool: ToolDefinition): ToolListing {
  const { $schema: _ignored, ...inputSchema } = z.toJSONSchema(tool.inputSchema, { io: 'input' }) as Record<
    string,
    unknown
  >;
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema,
    execution: { taskSupport: taskSupportOf(tool) },
  };
}
