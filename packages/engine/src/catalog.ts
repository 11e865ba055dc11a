// The tool catalog in Redis (docs/catalog.md): workers publish the definitions they serve with a heartbeat; api
// replicas list the union of the live ones from a cache that a pub/sub message (or a periodic reload) renews.
import { randomUUID } from 'node:crypto';
import {
  canonicalJson,
  entrySizeReason,
  selectLiveTools,
  type Admission,
  type CatalogBounds,
  type CatalogEntry,
} from '@mcp-tasks/protocol';
import type { CatalogEnv } from './config.ts';
import type { KeySpace } from './keys.ts';
import type { Logger } from './logger.ts';
import type { RedisClient } from './redis.ts';
import type { SchemaBudget } from './schema-budget.ts';
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
        `one ${graceMs} ms later (CATALOG_GRACE_MS). Live: ${shortened(live)} This worker's: ${shortened(published)}`,
    );
    this.name = 'CatalogConflictError';
  }
}

/** The live entry may be anyone's, of any size: an error message quotes its beginning. */
function shortened(json: string, length = 2000): string {
  return json.length <= length ? json : `${json.slice(0, length)}... (${json.length} characters)`;
}

/** A live entry this process left out (docs/catalog.md, "Bounds"), and why. */
export interface CatalogRefusal {
  tool: string;
  reason: string;
  /** The worker that last published it (publish-catalog-4.lua); absent for a consumer that writes the hash itself. */
  publisher?: string;
}

export interface CatalogReading {
  /** The admitted live entries, by name; an unchanged entry is the same object from one read to the next. */
  entries: Map<string, CatalogEntry>;
  refused: CatalogRefusal[];
}

type CatalogSettings = Pick<CatalogEnv, 'CATALOG_GRACE_MS' | 'CATALOG_HEARTBEAT_MS'>;

export class ToolCatalog {
  readonly bounds: CatalogBounds;
  /**
   * Who publishes through this catalog, unique per process object: two workers of one process share their name, and
   * one withdraws only what it published itself.
   */
  readonly instance = randomUUID();
  /** The verdict on each entry's JSON as last read: an unchanged entry is neither parsed nor compiled again. */
  readonly #verdicts = new Map<string, { raw: string; admission: Admission }>();
  /** Refusals already told to the listeners (tool and reason), so that each is logged once, not at every read. */
  readonly #reported = new Set<string>();
  readonly #refusalListeners = new Set<(refusals: readonly CatalogRefusal[]) => void>();
  /** Admissions a reading did not wait for (their schema is judged in a thread), by name. */
  readonly #pending = new Map<string, Promise<unknown>>();
  readonly #settledListeners = new Set<() => void>();

  constructor(
    private readonly redis: RedisClient,
    readonly keys: KeySpace,
    readonly timing: CatalogSettings,
    /** Admits each entry within the bounds and budgets, and holds the validators (docs/catalog.md, "Budgets"). */
    readonly schemas: SchemaBudget,
  ) {
    this.bounds = schemas.bounds;
  }

  /**
   * Publishes (or refreshes) the entries as `publisher` (the worker's name), or as `publisherOf(name)` where that
   * names another (an upstream the worker fronts: each publisher has its share of the catalog, CATALOG_MAX_TOOLS_PER_
   * PUBLISHER); throws CatalogConflictError and writes nothing on a conflict.
   */
  async publish(
    entries: readonly CatalogEntry[],
    publisher = '',
    publisherOf: (tool: string) => string | undefined = () => undefined,
  ): Promise<{ changed: boolean }> {
    const now = Date.now();
    const reply = await RedisScripts.on(this.redis).publishCatalog({
      keys: this.#scriptKeys(),
      now,
      liveAfter: now - this.timing.CATALOG_GRACE_MS,
      channel: this.keys.catalogChannel(),
      publisher,
      instance: this.instance,
      entries: entries.map((entry) => {
        const own = publisherOf(entry.name);
        return { name: entry.name, json: canonicalJson(entry), ...(own !== undefined ? { publisher: own } : {}) };
      }),
    });
    if (reply.verdict === 'conflict') {
      const mine = entries.find((entry) => entry.name === reply.name);
      throw new CatalogConflictError(reply.name, canonicalJson(mine), reply.live, this.timing.CATALOG_GRACE_MS);
    }
    return { changed: reply.changed };
  }

  /**
   * Withdraws the entries this catalog published under `names` that no other live worker serves (a worker that stops
   * cleanly: docs/catalog.md), at once rather than after the grace period; answers how many went.
   */
  async withdraw(names: readonly string[]): Promise<number> {
    if (names.length === 0) return 0;
    return RedisScripts.on(this.redis).withdrawCatalog({
      keys: this.#scriptKeys(),
      liveAfter: Date.now() - this.timing.CATALOG_GRACE_MS,
      channel: this.keys.catalogChannel(),
      instance: this.instance,
      names,
    });
  }

  #scriptKeys() {
    return {
      tools: this.keys.catalogTools(),
      seen: this.keys.catalogSeen(),
      publishers: this.keys.catalogPublishers(),
      servers: this.keys.catalogServers(),
    };
  }

  /**
   * Re-publishes every heartbeat until stopped. A failed beat is reported and retried at the next one: the entries
   * stay listed for the grace period meanwhile.
   */
  heartbeat(entries: readonly CatalogEntry[], onError: (error: unknown) => void, publisher = ''): { stop(): void } {
    const timer = setInterval(() => {
      this.publish(entries, publisher).catch(onError);
    }, this.timing.CATALOG_HEARTBEAT_MS);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  /** The live entries this process admits, by name (readAll without the refusals). */
  async read(): Promise<Map<string, CatalogEntry>> {
    return (await this.readAll()).entries;
  }

  /** The admission of `name` still waiting for a schema thread (readAll with `pending: 'skip'` left it), if any. */
  pendingAdmission(name: string): Promise<unknown> | undefined {
    return this.#pending.get(name);
  }

  /** Tells `listener` each time an admission a reading left pending is settled: read again. */
  onSettled(listener: () => void): () => void {
    this.#settledListeners.add(listener);
    return () => this.#settledListeners.delete(listener);
  }

  /**
   * The live entries, each admitted within the bounds and budgets (docs/catalog.md, "Bounds", "Budgets"), and those
   * left out with their reason: beyond a publisher's share or CATALOG_MAX_TOOLS (selectLiveTools), larger than
   * CATALOG_MAX_ENTRY_BYTES (not even fetched), or refused by admission. New refusals are told to the listeners once.
   * `pending: 'skip'` (a process's cached view): an entry whose schema is still being judged in a schema thread once
   * the rest are admitted is left out of this reading, neither admitted nor refused; the onSettled listeners hear
   * when it is settled. By default a reading waits for every verdict.
   */
  async readAll(options: { pending?: 'wait' | 'skip' } = {}): Promise<CatalogReading> {
    const { maxEntryBytes } = this.bounds;
    const liveAfter = Date.now() - this.timing.CATALOG_GRACE_MS;
    const names = await this.redis.zrangebyscore(this.keys.catalogSeen(), liveAfter, '+inf');
    const { maxTools, maxToolsPerPublisher } = this.bounds;
    const publishers = new Map<string, string>();
    // Only a catalog beyond a share needs to know who publishes what.
    if (names.length > Math.min(maxTools, maxToolsPerPublisher)) {
      const recorded = await this.redis.hmget(this.keys.catalogPublishers(), ...names);
      names.forEach((name, i) => publishers.set(name, recorded[i] ?? ''));
    }
    const selection = selectLiveTools(names, (tool) => publishers.get(tool) ?? '', this.bounds);
    const refused: CatalogRefusal[] = [...selection.leftOut];
    const sizes = await this.#sizes(selection.kept);
    const fetched = selection.kept.filter((name, i) => {
      const bytes = sizes[i] ?? 0;
      if (bytes > maxEntryBytes) {
        refused.push({ tool: name, reason: entrySizeReason(bytes, this.bounds) });
      }
      return bytes > 0 && bytes <= maxEntryBytes;
    });
    const values = fetched.length > 0 ? await this.redis.hmget(this.keys.catalogTools(), ...fetched) : [];
    // Admitted side by side (each step on the event loop is taken in turn): a schema compiled in a thread does not
    // hold up the others.
    const settled = new Map<string, Admission>();
    const admissions = fetched.map((name, i) => {
      const raw = values[i];
      if (raw === null || raw === undefined) return Promise.resolve();
      return this.#admit(name, raw).then((admission) => void settled.set(name, admission));
    });
    if (options.pending === 'skip') {
      await Promise.race([Promise.all(admissions), this.schemas.loopSettled()]);
      this.#leavePending(fetched, admissions, settled);
    } else {
      await Promise.all(admissions);
    }
    const entries = new Map<string, CatalogEntry>();
    for (const name of fetched) {
      const admission = settled.get(name);
      if (admission === undefined) continue;
      if (admission.ok) entries.set(name, admission.entry);
      else refused.push({ tool: name, reason: admission.reason });
    }
    const present = new Set(fetched);
    for (const name of this.#verdicts.keys()) if (!present.has(name)) this.#verdicts.delete(name);
    return { entries, refused: await this.#withPublishers(refused, publishers) };
  }

  /** The admissions not settled yet wait for a schema thread: the onSettled listeners hear when each is. */
  #leavePending(
    names: readonly string[],
    admissions: readonly Promise<void>[],
    settled: ReadonlyMap<string, Admission>,
  ) {
    names.forEach((name, i) => {
      if (settled.has(name) || this.#pending.has(name)) return;
      const admission = (admissions[i] as Promise<void>).catch(() => undefined);
      this.#pending.set(name, admission);
      void admission.then(() => {
        this.#pending.delete(name);
        for (const listener of this.#settledListeners) listener();
      });
    });
  }

  onRefusal(listener: (refusals: readonly CatalogRefusal[]) => void): () => void {
    this.#refusalListeners.add(listener);
    return () => this.#refusalListeners.delete(listener);
  }

  async #sizes(names: readonly string[]): Promise<number[]> {
    if (names.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const name of names) pipeline.hstrlen(this.keys.catalogTools(), name);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, bytes]) => (error ? 0 : Number(bytes)));
  }

  /**
   * The verdict on an entry's JSON: the last one while the JSON is unchanged. A new one is the schema budget's, kept
   * by content: the same entry under another name, or back after a change, is not compiled again either.
   */
  async #admit(name: string, raw: string): Promise<Admission> {
    const known = this.#verdicts.get(name);
    if (known?.raw === raw) return known.admission;
    const admission = await this.schemas.admitPublished(name, raw);
    // A refusal that says nothing of the entry (a schema thread could not start) is asked again at the next read.
    if (admission.ok || admission.transient !== true) this.#verdicts.set(name, { raw, admission });
    return admission;
  }

  async #withPublishers(refused: CatalogRefusal[], known: ReadonlyMap<string, string>): Promise<CatalogRefusal[]> {
    if (refused.length === 0) {
      this.#reported.clear();
      return refused;
    }
    const unknown = refused.map((r) => r.tool).filter((tool) => !known.has(tool));
    const read = unknown.length > 0 ? await this.redis.hmget(this.keys.catalogPublishers(), ...unknown) : [];
    const publishers = new Map(known);
    unknown.forEach((tool, i) => publishers.set(tool, read[i] ?? ''));
    const described = refused.map((refusal) => {
      const publisher = publishers.get(refusal.tool);
      return publisher ? { ...refusal, publisher } : refusal;
    });
    const current = new Set(described.map((r) => `${r.tool}\n${r.reason}`));
    for (const key of this.#reported) if (!current.has(key)) this.#reported.delete(key);
    const fresh = described.filter((r) => !this.#reported.has(`${r.tool}\n${r.reason}`));
    for (const r of fresh) this.#reported.add(`${r.tool}\n${r.reason}`);
    if (fresh.length > 0) for (const listener of this.#refusalListeners) listener(fresh);
    return described;
  }
}

type ChangeListener = (entries: ReadonlyMap<string, CatalogEntry>) => void;

/**
 * One process's cached view of the live catalog. Reloaded when a publisher says the catalog changed, and every
 * `reloadMs` (a lost message, a tool whose grace period ran out); listeners hear of every change of the listing.
 */
export class CatalogView {
  #entries: ReadonlyMap<string, CatalogEntry> = new Map();
  #refused: ReadonlyMap<string, CatalogRefusal> = new Map();
  #loaded = false;
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
    const stopSettled = this.catalog.onSettled(() => void this.reload());
    const stopListening = await this.subscriber.listen(this.catalog.keys.catalogChannel(), () => {
      void this.reload();
    });
    this.#unsubscribe = async () => {
      stopSettled();
      await stopListening();
    };
    await this.reload();
    this.#timer = setInterval(() => void this.reload(), this.options.reloadMs);
    this.#timer.unref();
  }

  entries(): ReadonlyMap<string, CatalogEntry> {
    return this.#entries;
  }

  /** Whether the catalog was read at least once: before that, an absent tool is unknown to us, not to the system. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /**
   * Waits up to `ms` for `name` to be published (a change announced on the channel, or a periodic reload); the entry,
   * or undefined when it did not come.
   */
  async waitFor(name: string, ms: number): Promise<CatalogEntry | undefined> {
    if (ms <= 0) return this.#entries.get(name);
    let stop: () => void = () => undefined;
    const arrived = new Promise<CatalogEntry | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ms);
      const unsubscribe = this.onChange((entries) => {
        const entry = entries.get(name);
        if (entry) resolve(entry);
      });
      stop = () => {
        clearTimeout(timer);
        unsubscribe();
      };
    });
    try {
      return this.#entries.get(name) ?? (await arrived);
    } finally {
      stop();
    }
  }

  /** Why a live tool is left out of the listing (docs/catalog.md, "Bounds"), if it is. */
  refusal(name: string): CatalogRefusal | undefined {
    return this.#refused.get(name);
  }

  /** The live tools left out of the listing, with why (docs/catalog.md, "Bounds", "Budgets"). */
  refusals(): CatalogRefusal[] {
    return [...this.#refused.values()];
  }

  /**
   * The entry, reading Redis again first when the cache does not have it (a tool published a moment ago), after its
   * schema's verdict when a schema thread is still judging it.
   */
  async get(name: string): Promise<CatalogEntry | undefined> {
    const cached = this.#entries.get(name);
    if (cached) return cached;
    await this.catalog.pendingAdmission(name);
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
    let reading: CatalogReading;
    try {
      // A schema a thread is judging holds up no other entry: it joins the listing when it is settled.
      reading = await this.catalog.readAll({ pending: 'skip' });
    } catch (error) {
      this.options.onError?.(error);
      return;
    }
    const { entries, refused } = reading;
    this.#refused = new Map(refused.map((refusal) => [refusal.tool, refusal]));
    // An unchanged entry is the same object from one read to the next (ToolCatalog keeps its verdicts).
    const unchanged =
      entries.size === this.#entries.size && [...entries].every(([name, entry]) => this.#entries.get(name) === entry);
    if (this.#loaded && unchanged) return;
    const first = !this.#loaded;
    this.#entries = entries;
    this.#loaded = true;
    if (!first) for (const listener of this.#listeners) listener(entries);
  }
}

/** At most this many refusals are logged one by one per read; a flood of bad entries gets one line for the rest. */
const REFUSALS_LOGGED = 20;

/**
 * Logs each entry the catalog refuses once, with its publisher and reason (ToolCatalog tells each refusal once, not
 * at every read), and each schema thread replaced after it overran its budget. Returns the unsubscribe function.
 */
export function logCatalogRefusals(catalog: ToolCatalog, log: Logger): () => void {
  const stopThreads = catalog.schemas.onThreadEvent((event, fields) => log.warn(event, fields));
  const stopRefusals = catalog.onRefusal((refusals) => {
    for (const { tool, reason, publisher } of refusals.slice(0, REFUSALS_LOGGED)) {
      log.warn('tool catalog entry refused', { tool, publisher: publisher ?? 'unknown', reason });
    }
    if (refusals.length > REFUSALS_LOGGED) {
      log.warn('tool catalog entries refused', {
        more: refusals.length - REFUSALS_LOGGED,
        tools: refusals.slice(REFUSALS_LOGGED, REFUSALS_LOGGED + 100).map((refusal) => refusal.tool),
      });
    }
  });
  return () => {
    stopThreads();
    stopRefusals();
  };
}
