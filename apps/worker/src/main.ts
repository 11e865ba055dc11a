// Entry point of one worker process: `pnpm worker`.
import { ConfigError, onShutdownSignal } from '@mcp-tasks/engine';
import { loadWorkerConfig } from './config.ts';
import { startWorker } from './worker.ts';

try {
  const worker = await startWorker(loadWorkerConfig());
  onShutdownSignal(async (signal) => {
    worker.log.info('shutting down', { signal });
    await worker.close();
  });
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
