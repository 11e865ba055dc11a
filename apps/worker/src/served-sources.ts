// What a worker started from the environment serves (`mcpt worker`, `mcpt start`, `pnpm worker`): the modules of
// MCPT_TOOLS, the upstream MCP servers, and the demo tools only when asked for (MCPT_DEMO=1, `--demo`): a worker
// that silently served them (`crash` included) would put them into a shared catalog.
import { ConfigError } from '@mcp-tasks/runtime';
import type { ToolDefinition } from '@mcp-tasks/protocol';
import { demoTools } from '@mcp-tasks/tools';
import type { WorkerConfig } from './config.ts';
import { loadTools } from './load-tools.ts';
import { loadUpstreams, type UpstreamConfig } from './upstream/config.ts';

export interface ServedSources {
  tools: ToolDefinition[];
  upstreams: UpstreamConfig[];
}

export const NOTHING_TO_SERVE =
  'A worker needs tools to serve, and none is configured: set MCPT_TOOLS=./tools.js (comma-separated modules that ' +
  'export `tools`), or an upstream MCP server (UPSTREAM_MCP_COMMAND, UPSTREAM_MCP_URL or MCPT_UPSTREAMS), or ask ' +
  'for the demo tools with `mcpt worker --demo` (`mcpt start --demo`; MCPT_DEMO=1).';

/** The tools and upstreams the environment names; throws ConfigError when it names none and the demo is not asked. */
export async function servedSources(
  config: Pick<WorkerConfig, 'MCPT_DEMO'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ServedSources> {
  const upstreams = loadUpstreams(env);
  const own = (await loadTools(env['MCPT_TOOLS'])) ?? [];
  const tools = config.MCPT_DEMO ? [...demoTools, ...own] : own;
  if (tools.length === 0 && upstreams.length === 0) throw new ConfigError(NOTHING_TO_SERVE);
  return { tools, upstreams };
}
