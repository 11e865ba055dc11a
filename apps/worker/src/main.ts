// Entry point of one worker process: `pnpm worker` or `mcpt worker`. MCPT_TOOLS names the tool modules; without it
// the demo tools are served.
import { CatalogConflictError, ConfigError, onShutdownSignal } from '@mcp-tasks/engine';
import { demoTools } from '@mcp-tasks/tools';
import { loadWorkerConfig } from './config.ts';
import { loadTools } from './load-tools.ts';
import { startWorker } from './worker.ts';

try {
  const config = loadWorkerConfig();
  const tools = (await loadTools(process.env['MCPT_TOOLS'])) ?? demoTools;
  const worker = await startWorker(config, tools);
  onShutdownSignal(async (signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
} catch (error) {
  console.error(error instanceof ConfigError || error instanceof CatalogConflictError ? error.message : error);
  process.exit(1);
}
