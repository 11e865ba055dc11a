// The 2025-11-25 wire's methods, each parsed, run by its use case and rendered (../method-table.ts). initialize is not
// here: it opens a session, which post.ts does before any of these can be asked.
import type { HandlerReply, RequestContext } from './context.ts';
import { constantMethod, dispatchTable } from '../method-table.ts';
import { cancelTask, getTask, getTaskResult, listTasks } from './tasks.ts';
import { callTool, listTools } from './tools.ts';

export const LEGACY_METHODS = dispatchTable<RequestContext, HandlerReply>([
  constantMethod('ping', () => ({})),
  listTools,
  callTool,
  getTask,
  getTaskResult,
  listTasks,
  cancelTask,
]);
