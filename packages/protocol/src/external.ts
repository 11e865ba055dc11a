// Tools whose work runs elsewhere (docs/external-tools.md): a batch system reached over HTTP that calls back or is
// polled, or a consumer outside this codebase that takes jobs from a BullMQ queue of its own (docs/job-contract.md).
// Pure: the shapes, the definitions and the mapping of what the external side reports onto the task.
import { z } from 'zod';
import { ErrorCode, ProtocolError } from './jsonrpc.ts';
import { settleWithError, settleWithResult, type Settlement } from './outcome.ts';
import { CallToolResultSchema, describeIssues, type CallToolResult } from './schemas.ts';
import type { ExternalRef } from './task.ts';
import type { ToolDefinition, ToolLogger } from './tool.ts';

/** Where the external system posts progress and the final report of one task, and the token it must present. */
export interface CallbackTarget {
  url: string;
  /** `Authorization: Bearer <token>`; bound to the task and its expiry, usable once for the final report. */
  token: string;
}

export interface ExternalContext {
  taskId: string;
  /** Fires when the task is cancelled during the submission or a poll. */
  signal: AbortSignal;
  log: ToolLogger;
  /** Present when the worker is configured for callbacks (CALLBACK_SECRET and CALLBACK_BASE_URL). */
  callback?: CallbackTarget;
}

/** What `submit` answers: the external id and how the outcome comes back. */
export interface ExternalSubmission {
  externalId: string;
  mode: 'callback' | 'poll';
  /** Required for `poll`: what `poll` reads. */
  statusUrl?: string;
  /** POSTed when the task is cancelled (or expires while the work runs). */
  cancelUrl?: string;
  /** The task's statusMessage while it waits; a default names the external id. */
  statusMessage?: string;
}

/** One poll's reading of the external work. */
export type ExternalStatus =
  | { state: 'running'; progress?: number; total?: number; message?: string }
  | { state: 'completed'; result: CallToolResult }
  | { state: 'failed'; message: string };

export interface ExternalHandlers<Args> {
  /**
   * Hands the work to the external system. Must be idempotent per `context.taskId` (send it as the idempotency key):
   * a worker that dies right after submitting makes the job run again.
   */
  submit(args: Args, context: ExternalContext): Promise<ExternalSubmission>;
  /** Reads the work's status; needed for `mode: 'poll'`. A thrown error spends one of the job's attempts. */
  poll?(ref: ExternalRef, context: ExternalContext): Promise<ExternalStatus>;
}

export type ExternalToolDefinition<S extends z.ZodType = z.ZodType> = ToolDefinition<S> & {
  external: ExternalHandlers<z.infer<S>>;
};

export type QueueToolDefinition<S extends z.ZodType = z.ZodType> = ToolDefinition<S> & {
  /** The BullMQ queue an external consumer takes this tool's jobs from; our workers never read it. */
  queue: string;
};

/** The queue of a tool consumed outside this codebase: `ext-<tool name>` (part of job contract v1). */
export function externalQueueName(tool: string): string {
  return `ext-${tool}`;
}

type Definition<S extends z.ZodType> = Omit<ToolDefinition<S>, 'run'>;

/** A tool whose work an external system does: the worker submits it and the task stays `working` until it reports. */
export function defineExternalTool<S extends z.ZodType>(
  definition: Definition<S> & { external: ExternalHandlers<z.infer<S>> },
): ExternalToolDefinition<S> {
  return {
    ...definition,
    run: () => Promise.reject(new Error(`Tool '${definition.name}' runs on an external system, not through run()`)),
  };
}

/** A tool served by an external consumer of the BullMQ queue `ext-<name>` (docs/job-contract.md). */
export function defineQueueTool<S extends z.ZodType>(definition: Definition<S>): QueueToolDefinition<S> {
  const queue = externalQueueName(definition.name);
  return {
    ...definition,
    queue,
    run: () => Promise.reject(new Error(`Tool '${definition.name}' is served by a consumer of queue '${queue}'`)),
  };
}

export function isExternalTool(tool: ToolDefinition): tool is ExternalToolDefinition {
  return typeof (tool as Partial<ExternalToolDefinition>).external?.submit === 'function';
}

/** The queue of a tool served by an external consumer, or undefined for a tool our workers run. */
export function queueOfTool(tool: ToolDefinition): string | undefined {
  const queue = (tool as Partial<QueueToolDefinition>).queue;
  return typeof queue === 'string' ? queue : undefined;
}

/** What an external system posts to POST /callbacks/tasks/:taskId (docs/external-tools.md). */
export const CallbackPayloadSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('progress'),
    progress: z.number(),
    total: z.number().optional(),
    message: z.string().max(500).optional(),
  }),
  z.object({ type: z.literal('result'), result: CallToolResultSchema }),
  z.object({ type: z.literal('failure'), message: z.string().min(1).max(10_000) }),
]);
export type CallbackPayload = z.infer<typeof CallbackPayloadSchema>;

/** How an external failure ends the task: `failed`, and tasks/result answers -32603 with the external message. */
export function settleWithExternalFailure(tool: string, message: string): Settlement {
  return settleWithError(tool, new Error(message));
}

/**
 * A job's return value from an external queue consumer (contract v1): a CallToolResult object, or its JSON text
 * (BullMQ stores return values as JSON, other ports hand them over as strings). Anything else fails the task and
 * says why, so a consumer bug is visible on the task.
 */
export function settleWithJobReturn(tool: string, returnvalue: unknown): Settlement {
  let value = returnvalue;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      // Not JSON: reported below as not a CallToolResult.
    }
  }
  const parsed = CallToolResultSchema.safeParse(value);
  if (parsed.success) return settleWithResult(parsed.data);
  const problem = value === null || value === undefined ? 'nothing' : describeIssues(parsed.error);
  return settleWithError(
    tool,
    new ProtocolError(
      ErrorCode.InternalError,
      `Tool '${tool}' failed: its external consumer returned an invalid CallToolResult (${problem})`,
      { tool },
    ),
  );
}

/** A job the external consumer failed (its `failedReason`, after the job's attempts): the task fails with it. */
export function settleWithJobFailure(tool: string, failedReason: string | undefined): Settlement {
  return settleWithError(tool, new Error(failedReason || 'the external consumer gave no reason'));
}

/** Progress a consumer reports with `job.updateProgress`: a number, or `{ progress, total?, message? }`. */
export function progressFromJob(data: unknown): { progress: number; total?: number; message?: string } | undefined {
  if (typeof data === 'number') return { progress: data };
  const parsed = z
    .object({ progress: z.number(), total: z.number().optional(), message: z.string().max(500).optional() })
    .safeParse(data);
  return parsed.success ? parsed.data : undefined;
}
