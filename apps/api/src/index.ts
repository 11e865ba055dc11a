/**
 * @mcp-tasks/api — the MCP endpoint as a library: `startApi(config)` builds one api process's server (the `mcpt api`
 * command and the package's programmatic `startApi` use it).
 *
 * @example
 * const api = await startApi(loadApiConfig({ ...process.env, PORT: '0' }));
 * console.log(api.url);
 * await api.close();
 */
export { startApi, type RunningApi } from './app.ts';
export { ApiEnvSchema, loadApiConfig, type ApiConfig } from './config.ts';
