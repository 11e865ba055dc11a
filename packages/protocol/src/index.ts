/**
 * @mcp-tasks/protocol — the pure vocabulary of the runner: MCP wire schemas, JSON-RPC errors, the task state
 * machine, the BullMQ job-state mapping, the result mapping and the tool-definition API. No I/O.
 *
 * @example
 * import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
 * export const hello = defineTool({
 *   name: 'hello', description: 'Greets', inputSchema: z.object({ who: z.string() }),
 *   taskSupport: TaskSupport.Optional,
 *   run: async ({ who }) => ({ content: [{ type: 'text', text: `hello ${who}` }] }),
 * });
 */
export * from './capabilities.ts';
export * from './catalog.ts';
export * from './catalog-admission.ts';
export * from './errors.ts';
export * from './external.ts';
export * from './handles.ts';
export * from './job-state.ts';
export * from './jsonrpc.ts';
export * from './meta.ts';
export * from './outcome.ts';
export * from './scheduling.ts';
export { compileLinearPattern, patternSizeBound } from './linear-pattern.ts';
export * from './schemas.ts';
export {
  costFigure,
  judgeArgumentsSchema,
  MAX_ARGUMENTS_DEPTH,
  overBudget,
  schemaCost,
  type SchemaBounds,
  type SchemaCost,
} from './schema-cost.ts';
export {
  checkArgumentsSchema,
  compileArgumentsSchema,
  SchemaError,
  type ArgumentsCheck,
  type ArgumentsValidator,
} from './schema-validation.ts';
export * from './task.ts';
export * from './task-status.ts';
export * from './tool.ts';
export * from './webhook.ts';
export * from './modern.ts';
