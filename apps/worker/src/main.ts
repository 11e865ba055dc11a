// Entry point of one worker process: `pnpm worker` or `mcpt worker`. MCPT_TOOLS names the tool modules, and
// MCPT_UPSTREAMS / UPSTREAM_MCP_COMMAND / UPSTREAM_MCP_URL the MCP servers whose tools are served too; the demo
// tools only with `--demo` or MCPT_DEMO=1 (served-sources.ts). With none of them the worker refuses to start.
import { CatalogConflictError } from '@mcp-tasks/engine';
import { ConfigError, stopOnShutdownSignal } from '@mcp-tasks/runtime';
import { CatalogEntryError } from '@mcp-tasks/protocol';
import { loadWorkerConfig } from './config.ts';
import { servedSources } from './served-sources.ts';
import { startWorker } from './worker.ts';

try {
  if (process.argv.slice(2).includes('--demo')) process.env['MCPT_DEMO'] = '1';
  const config = loadWorkerConfig();
  const { tools, upstreams } = await servedSources(config);
  const starting = startWorker(config, tools, { upstreams });
  stopOnShutdownSignal(starting, async (worker, signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
  await starting;
} catch (error) {
  const explained = [ConfigError, CatalogConflictError, CatalogEntryError].some((type) => error instanceof type);
  console.error(explained ? (error as Error).message : error);
  process.exit(1);
}
