/**
 * @mcp-tasks/worker — a worker as a library: `startWorker(config, tools)` publishes the tools to the catalog and runs
 * their jobs (the `mcpt worker` command and the package's programmatic `startWorker` use it).
 *
 * @example
 * const worker = await startWorker(loadWorkerConfig(), await loadTools('./tools.js'));
 * await worker.close();
 */
export { loadTools } from './load-tools.ts';
export { servedSources, type ServedSources } from './served-sources.ts';
export { loadWorkerConfig, WorkerEnvSchema, type WorkerConfig } from './config.ts';
export { startWorker, type RunningWorker, type WorkerSources } from './worker.ts';
export { loadUpstreams, parseUpstreams, type UpstreamConfig, type UpstreamOptions } from './upstream/config.ts';
