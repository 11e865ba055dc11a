// Entry point of one api process: `pnpm api`.
import { ConfigError, stopOnShutdownSignal } from '@mcp-tasks/runtime';
import { startApi } from './app.ts';
import { loadApiConfig } from './config.ts';

try {
  const starting = startApi(loadApiConfig());
  stopOnShutdownSignal(starting, async (api, signal) => {
    api.log.info('shutting down', { signal });
    await api.close();
  });
  const api = await starting;
  process.on('SIGHUP', () => api.reloadKeys());
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
