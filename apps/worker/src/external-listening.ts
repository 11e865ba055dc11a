// Tools served by external consumers: this worker maps their jobs' outcomes onto the tasks (docs/job-contract.md),
// for its own queue tools and for those a consumer in another language published to the catalog. Each queue's
// listener is registered on the cleanup stack as it starts, also when the catalog names a new one at runtime.
import { type CatalogView, ExternalQueueListener } from '@mcp-tasks/engine';
import { type CleanupStack, type Logger } from '@mcp-tasks/runtime';
import { queueOfTool, type CatalogEntry, type ToolDefinition } from '@mcp-tasks/protocol';
import type { WorkerConfig } from './config.ts';
import type { WorkerEngine } from './worker-engine.ts';

export async function listenToExternalQueues(
  config: WorkerConfig,
  { redis, engine }: WorkerEngine,
  tools: readonly ToolDefinition[],
  /** The process's view of the live catalog (started): the queues consumers publish come and go with it. */
  catalogView: CatalogView,
  log: Logger,
  cleanup: CleanupStack,
): Promise<void> {
  const listening = new Set<string>();
  const listen = async (queueName: string) => {
    if (listening.has(queueName)) return;
    listening.add(queueName);
    const listener = new ExternalQueueListener(queueName, {
      env: config,
      prefix: config.REDIS_PREFIX,
      redis,
      keys: engine.keys,
      store: engine.store,
      external: engine.external,
      log,
    });
    cleanup.add(`external-queue-listener-${queueName}`, listener, (l) => l.close());
    await listener.start();
  };
  const listenToCatalog = (entries: Iterable<CatalogEntry>) => {
    for (const entry of entries) {
      if (!entry.external) continue;
      listen(entry.queue).catch((error: unknown) =>
        log.warn('external queue not listened to', { queue: entry.queue, error: String(error) }),
      );
    }
  };
  for (const tool of tools) {
    const queueName = queueOfTool(tool);
    if (queueName !== undefined) await listen(queueName);
  }
  catalogView.onChange((entries) => listenToCatalog(entries.values()));
  listenToCatalog(catalogView.entries().values());
}
