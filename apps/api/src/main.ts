// Entry point of one api process: `pnpm api`.
import { ConfigError, onShutdownSignal } from '@mcp-tasks/engine';
import { startApi } from './app.ts';
import { loadApiConfig } from './config.ts';

try {
  const api = await startApi(loadApiConfig());
  process.on('SIGHUP', () => api.reloadKeys());
  onShutdownSignal(async (signal) => {
    api.log.info('shutting down', { signal });
    await api.close();
  });
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
