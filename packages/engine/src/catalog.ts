// The tool catalog in Redis (docs/catalog.md): workers publish the definitions they serve with a heartbeat; api
// replicas list the union of the live ones from a cache that a pub/sub message (or a periodic reload) renews.
import { canonicalJson, CatalogEntrySchema, type CatalogEntry } from '@mcp-tasks/protocol';
import type { CatalogEnv } from './config.ts';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import { RedisScripts } from './scripts.ts';
import type { Subscriber } from './subscriber.ts';

/** A worker's definition of a tool differs from the one live workers publish under the same name. */
export class CatalogConflictError extends Error {
  constructor(
    readonly tool: string,
    readonly published: string,
    readonly live: string,
    graceMs: number,
  ) {
    super(
      `Tool '${tool}' is already served with a different definition by other workers; this worker's definition ` +
        `is refused. Give the changed tool a new name, or stop the workers serving the old one and start this ` +
        `one ${graceMs} ms later (CATALOG_GRACE_MS). Live: ${live} This worker's: ${published}`,
    );
    this.name = 'CatalogConflictError';
  }
}

export class ToolCatalog {
  constructor(
    private readonly redis: RedisClient,
    readonly keys: KeySpace,
    readonly timing: Pick<CatalogEnv, 'CATALOG_GRACE_MS' | 'CATALOG_HEARTBEAT_MS'>,
  ) {}

  /** Publishes (or refreshes) the entries; throws CatalogConflictError and writes nothing on a conflict. */
  async publish(entries: readonly CatalogEntry[]): Promise<{ changed: boolean }> {
    const now = Date.now();
    const reply = await RedisScripts.on(this.redis).publishCatalog({
      keys: { tools: this.keys.catalogTools(), seen: this.keys.catalogSeen() },
      now,
      liveAfter: now - this.timing.CATALOG_GRACE_MS,
      channel: this.keys.catalogChannel(),
      entries: entries.map((entry) => ({ name: entry.name, json: canonicalJson(entry) })),
    });
    if (reply.verdict === 'conflict') {
      const mine = entries.find((entry) => entry.name === reply.name);
      throw new CatalogConflictError(reply.name, canonicalJson(mine), reply.live, this.timing.CATALOG_GRACE_MS);
    }
    return { changed: reply.changed };
  }

  /**
   * Re-publishes every heartbeat until stopped. A failed beat is reported and retried at the next one: the entries
   * stay listed for the grace period meanwhile.
   */
  heartbeat(entries: readonly CatalogEntry[], onError: (error: unknown) => void): { stop(): void } {
    const timer = setInterval(() => {
      this.publish(entries).catch(onError);
    }, this.timing.CATALOG_HEARTBEAT_MS);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  /** The live entries, by name; an entry that does not parse (a foreign consumer's bug) is left out. */
  async read(): Promise<Map<string, CatalogEntry>> {
    const liveAfter = Date.now() - this.timing.CATALOG_GRACE_MS;
    const names = await this.redis.zrangebyscore(this.keys.catalogSeen(), liveAfter, '+inf');
    const entries = new Map<string, CatalogEntry>();
    if (names.length === 0) return entries;
    const values = await this.redis.hmget(this.keys.catalogTools(), ...names);
    values.forEach((value) => {
      if (value === null) return;
      try {
        const parsed = CatalogEntrySchema.safeParse(JSON.parse(value));
        if (parsed.success) entries.set(parsed.data.name, parsed.data);
      } catch {
        // Not JSON: left out, as above.
      }
    });
    return entries;
  }
}

type ChangeListener = (entries: ReadonlyMap<string, CatalogEntry>) => void;

/**
 * One process's cached view of the live catalog. Reloaded when a publisher says the catalog changed, and every
 * `reloadMs` (a lost message, a tool whose grace period ran out); listeners hear of every change of the listing.
 */
export class CatalogView {
  #entries: ReadonlyMap<string, CatalogEntry> = new Map();
  #fingerprint = '';
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;
  #reloading: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  readonly #listeners = new Set<ChangeListener>();

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly subscriber: Subscriber,
    private readonly options: { reloadMs: number; onError?: (error: unknown) => void },
  ) {}

  async start(): Promise<void> {
    this.#unsubscribe = await this.subscriber.listen(this.catalog.keys.catalogChannel(), () => {
      void this.reload();
    });
    await this.reload();
    this.#timer = setInterval(() => void this.reload(), this.options.reloadMs);
    this.#timer.unref();
  }

  entries(): ReadonlyMap<string, CatalogEntry> {
    return this.#entries;
  }

  /** The entry, reading Redis again first when the cache does not have it (a tool published a moment ago). */
  async get(name: string): Promise<CatalogEntry | undefined> {
    const cached = this.#entries.get(name);
    if (cached) return cached;
    await this.reload();
    return this.#entries.get(name);
  }

  onChange(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Reads the catalog. Callers during a read share the next one (not the one under way, which may have started
   * before the change they were told of).
   */
  reload(): Promise<void> {
    if (this.#reloading) {
      this.#next ??= this.#reloading.then(() => {
        this.#next = undefined;
        return this.reload();
      });
      return this.#next;
    }
    this.#reloading = this.#load().finally(() => (this.#reloading = undefined));
    return this.#reloading;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#listeners.clear();
    await this.#unsubscribe?.();
  }

  async #load(): Promise<void> {
    let entries: Map<string, CatalogEntry>;
    try {
      entries = await this.catalog.read();
    } catch (error) {
      this.options.onError?.(error);
      return;
    }
    const fingerprint = canonicalJson([...entries.values()].sort((a, b) => (a.name < b.name ? -1 : 1)));
    if (fingerprint === this.#fingerprint) return;
    const first = this.#fingerprint === '';
    this.#entries = entries;
    this.#fingerprint = fingerprint;
    if (!first) for (const listener of this.#listeners) listener(entries);
  }
}
