// Entry point of one worker process: `pnpm worker` or `mcpt worker`. MCPT_TOOLS names the tool modules, and
// MCPT_UPSTREAMS / UPSTREAM_MCP_COMMAND / UPSTREAM_MCP_URL the MCP servers whose tools are served too; with neither,
// the demo tools are served.
import { CatalogConflictError, ConfigError, onShutdownSignal } from '@mcp-tasks/engine';
import { CatalogEntryError } from '@mcp-tasks/protocol';
import { demoTools } from '@mcp-tasks/tools';
import { loadWorkerConfig } from './config.ts';
import { loadTools } from './load-tools.ts';
import { loadUpstreams } from './upstream/config.ts';
import { startWorker } from './worker.ts';

try {
  const config = loadWorkerConfig();
  const upstreams = loadUpstreams();
  const tools = (await loadTools(process.env['MCPT_TOOLS'])) ?? (upstreams.length > 0 ? [] : demoTools);
  const worker = await startWorker(config, tools, { upstreams });
  onShutdownSignal(async (signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
} catch (error) {
  const explained = [ConfigError, CatalogConflictError, CatalogEntryError].some((type) => error instanceof type);
  console.error(explained ? (error as Error).message : error);
  process.exit(1);
}
