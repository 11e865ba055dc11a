// What this worker serves, in the tool catalog (docs/catalog.md): published before any job is taken, then at every
// heartbeat and at every change of an upstream's tools, with the tool queues run here following what is served.
import { CatalogConflictError, type CleanupStack, type Logger } from '@mcp-tasks/engine';
import type { CatalogEntry } from '@mcp-tasks/protocol';
import type { QueueWorkers } from './queue-workers.ts';
import type { ServedTools } from './served-tools.ts';
import type { UpstreamTools } from './upstream/upstream-tools.ts';

export interface Publishing {
  catalog: {
    publish(
      entries: readonly CatalogEntry[],
      publisher: string,
      publisherOf?: (tool: string) => string | undefined,
    ): Promise<unknown>;
    withdraw(names: readonly string[]): Promise<number>;
  };
  /** This worker's name, recorded with its entries: a process that refuses one at read names it. */
  publisher: string;
  served: ServedTools;
  upstreamTools: UpstreamTools | undefined;
  log: Logger;
}

/**
 * Publishes what the worker serves. An upstream tool the catalog refuses (live workers serve another definition
 * under its name: an upstream changed a tool, or two upstreams disagree) is withheld until a later beat succeeds
 * with it; a refused own tool is an error, as at start-up.
 */
export async function publishServed({ catalog, publisher, served, upstreamTools, log }: Publishing): Promise<void> {
  const withheld = new Set<string>();
  if (upstreamTools) served.update(upstreamTools.current());
  for (;;) {
    try {
      // An upstream's tools are published as '<worker>/<upstream>': each upstream has its own share of the catalog.
      await catalog.publish(served.entries(), publisher, (tool) => {
        const upstream = served.upstreamOf(tool);
        return upstream === undefined ? undefined : `${publisher}/${upstream}`;
      });
      return;
    } catch (error) {
      if (!(error instanceof CatalogConflictError) || served.isOwn(error.tool) || !upstreamTools) throw error;
      log.error('upstream tool withheld: the catalog has another definition under its name', {
        tool: error.tool,
        error: error.message,
      });
      withheld.add(error.tool);
      served.update(upstreamTools.current(), withheld);
    }
  }
}

/**
 * Withdraws what this worker published, at once, when it stops cleanly or its start fails after publishing: a worker
 * started next with a changed definition is not refused by its predecessor's entry for CATALOG_GRACE_MS. Entries
 * other live workers serve stay (withdraw-catalog-4.lua).
 */
export async function withdrawServed(publishing: Publishing): Promise<void> {
  // Two cleanup steps ask for it (the heartbeat's, early in a stop, and the entries', for a start that fails
  // before the heartbeat runs): one withdrawal is enough.
  if (withdrawn.has(publishing)) return;
  const { catalog, served, log } = publishing;
  const removed = await catalog.withdraw(served.entries().map((entry) => entry.name));
  withdrawn.add(publishing);
  if (removed > 0) log.info('tool catalog entries withdrawn', { removed });
}

const withdrawn = new WeakSet<Publishing>();

/**
 * Each beat (and each change of an upstream's tools: list_changed, a restart) publishes what is served now, runs the
 * queues of new tools and stops taking jobs of tools that left. One sync at a time.
 */
export function keepPublished(
  publishing: Publishing,
  queueWorkers: QueueWorkers,
  heartbeatMs: number,
  cleanup: CleanupStack,
): void {
  const { served, upstreamTools, log } = publishing;
  let syncing = Promise.resolve();
  const sync = () => {
    syncing = syncing
      .then(async () => {
        const before = served.names().join(',');
        await publishServed(publishing);
        if (!upstreamTools) return;
        await queueWorkers.keepOnly(new Set(served.queuesRunHere()));
        if (served.names().join(',') !== before) log.info('served tools changed', { tools: served.names() });
      })
      .catch((error: unknown) => {
        log.error('tool catalog not refreshed', { error: error instanceof Error ? error.message : String(error) });
      });
  };
  const heartbeat = setInterval(sync, heartbeatMs);
  heartbeat.unref();
  // Released before the tool queues close, which may wait for long runs: the catalog is told at once. A beat under
  // way ends first, so that it cannot publish again what was withdrawn.
  cleanup.add('catalog-heartbeat', heartbeat, async (timer) => {
    clearInterval(timer);
    await syncing;
    await withdrawServed(publishing);
  });
  if (!upstreamTools) return;
  upstreamTools.onChange(sync);
  // Upstreams are reached in the background: one listed before this listener was added is published now.
  sync();
}
