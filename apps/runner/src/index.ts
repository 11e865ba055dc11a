/**
 * mcp-task-runner — durable MCP Tasks on BullMQ and Redis, with your own tools.
 *
 * @example
 * // tools.js: served by `MCPT_TOOLS=./tools.js npx mcpt worker`; `npx mcpt api` lists and routes them.
 * import { defineTool } from 'mcp-task-runner';
 * import { z } from 'zod';
 * export const tools = [
 *   defineTool({
 *     name: 'resize_images',
 *     description: 'Resizes the images of a bucket',
 *     inputSchema: z.object({ bucket: z.string() }),
 *     taskSupport: 'optional',
 *     async run({ bucket }, { signal, progress }) {
 *       return { content: [{ type: 'text', text: `resized ${bucket}` }] };
 *     },
 *   }),
 * ];
 */
export { defineExternalTool, defineQueueTool, defineTool, TaskSupport } from '@mcp-tasks/protocol';
// The errors a tool throws or catches, each with its own `name`, for `instanceof`: FinalError (fail without retry),
// ProtocolError (fail with this JSON-RPC code), ChildTaskError (a child task failed: ctx.callTool), LocalError with
// its LocalErrorCode (ctx.elicit, ctx.checkpoint, ctx.step ... refused).
export { ChildTaskError, FinalError, LocalError, LocalErrorCode, ProtocolError } from '@mcp-tasks/protocol';
export type {
  CallbackTarget,
  CallToolOptions,
  CallToolResult,
  CatalogEntry,
  ElicitParams,
  EventOutcome,
  ExternalContext,
  ExternalHandlers,
  ExternalRef,
  ExternalStatus,
  ExternalSubmission,
  ExternalToolDefinition,
  InputOptions,
  QueueToolDefinition,
  RetryPolicy,
  Scheduling,
  SchedulingInput,
  SignalOutcome,
  StepOptions,
  ToolAnnotations,
  ToolContext,
  ToolDefinition,
  ToolLogger,
  WaitForEventOptions,
  WaitOptions,
} from '@mcp-tasks/protocol';
export { startApi, startWorker } from './start.ts';
// The loader of MCPT_TOOLS, for embedding: a tools file in ESM or CommonJS, whatever the project's own type.
export { loadTools } from '@mcp-tasks/worker';
export type { ApiHandle, ApiOptions, WorkerHandle, WorkerOptions } from './start.ts';
export type { UpstreamOptions } from '@mcp-tasks/worker';
