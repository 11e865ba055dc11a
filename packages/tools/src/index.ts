/**
 * @mcp-tasks/tools — the tools this runner serves. This list is the one place tools are registered: the api reads
 * it for tools/list and validation, the worker for execution. Adding a tool is one file plus one line here.
 *
 * @example
 * import { toolRegistry } from '@mcp-tasks/tools';
 * toolRegistry.get('wait');
 */
import { ToolRegistry } from '@mcp-tasks/protocol';
import { askUserTool } from './ask-user.ts';
import { batchReportTool } from './batch-report.ts';
import { countPrimesTool } from './count-primes.ts';
import { crashTool } from './crash.ts';
import { echoTool } from './echo.ts';
import { shoutTool } from './shout.ts';
import { onceTool } from './once.ts';
import { summarizeTool } from './summarize.ts';
import { waitTool } from './wait.ts';

export { countPrimesBelow } from './count-primes.ts';

export const toolRegistry = new ToolRegistry([
  waitTool,
  crashTool,
  countPrimesTool,
  echoTool,
  askUserTool,
  summarizeTool,
  onceTool,
  batchReportTool,
  shoutTool,
]);
