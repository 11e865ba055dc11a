/**
 * @mcp-tasks/tools — the demo tools: what a worker serves when MCPT_TOOLS names none. Workers publish them to the
 * tool catalog like any user's tools; the api never loads this package.
 *
 * @example
 * import { demoTools } from '@mcp-tasks/tools';
 * await startWorker(config, demoTools);
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

export const demoTools = [
  waitTool,
  crashTool,
  countPrimesTool,
  echoTool,
  askUserTool,
  summarizeTool,
  onceTool,
  batchReportTool,
  shoutTool,
];

export const toolRegistry = new ToolRegistry(demoTools);
