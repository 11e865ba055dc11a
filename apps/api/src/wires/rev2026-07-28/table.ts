// The 2026-07-28 wire's methods: the stateless core and the tasks extension, each parsed, run by its use case and
// rendered (../method-table.ts). Everything else — `initialize`, `ping`, `logging/setLevel`, `tasks/result`, `tasks/list`,
// unknown names — is -32601 with HTTP 404 (C26-MTH-1, X-ERR-4).
import { dispatchTable } from '../method-table.ts';
import type { ModernContext, ModernReply } from './context.ts';
import { listen } from './listen.ts';
import { cancelTask, getTask, updateTask } from './tasks.ts';
import { callTool, discover, emptyList, listTools, notFound } from './tools.ts';

export const MODERN_METHODS = dispatchTable<ModernContext, ModernReply>([
  discover,
  listTools,
  emptyList('prompts/list', 'prompts'),
  emptyList('resources/list', 'resources'),
  emptyList('resources/templates/list', 'resourceTemplates'),
  notFound('prompts/get', 'prompt', 'name'),
  notFound('resources/read', 'resource', 'uri'),
  callTool,
  getTask,
  updateTask,
  cancelTask,
  listen,
]);
