// The budget of judging published input schemas, compiling them and validating arguments against them
// (docs/catalog.md, "Budgets"): the one owner of every validator in a process. An entry's shape is admitted by
// protocol's catalog-admission.ts; its schema is judged by the cost model (schema-cost.ts) and compiled where its size
// says: a small and cheap schema on the event loop, any other in the schema threads (schema-threads.ts), under a
// deadline and a heap of their own (judging 1,600 patterns costs the event loop a quarter of a second). A call is validated
// on the event loop only when its schema is there and its cost times the arguments' size is small; otherwise in a
// thread, and refused when it overruns. Verdicts are kept by content: an entry listed again unchanged (a relisting, a
// reconnect, another name) is neither judged nor compiled again, and a quarantined one is not retried.
import { createHash } from 'node:crypto';
import {
  admitEntryToPublish,
  admitPublishedEntry,
  canonicalJson,
  compileArgumentsSchema,
  judgeArgumentsSchema,
  MAX_ARGUMENTS_DEPTH,
  SchemaError,
  valueDepth,
  type Admission,
  type ArgumentsValidator,
  type CatalogBounds,
  type CatalogEntry,
  type SchemaCost,
} from '@mcp-tasks/protocol';
import { SchemaThreads, type ThreadOutcome } from './schema-threads.ts';

export interface SchemaBudgetSettings {
  /** SCHEMA_COMPILE_TIMEOUT_MS: a schema compiled in a thread is quarantined beyond it. */
  compileTimeoutMs: number;
  /** SCHEMA_VALIDATION_TIMEOUT_MS: a call validated in a thread is refused (-32602) beyond it. */
  validationTimeoutMs: number;
  /** SCHEMA_THREAD_HEAP_MB: each schema thread's heap. */
  threadHeapMb: number;
  /** SCHEMA_THREADS: how many schema threads at most. */
  threads: number;
  /** SCHEMA_INLINE_MAX_BYTES: a schema whose JSON plus its RE2 instructions is this small compiles on the event loop. */
  inlineMaxBytes: number;
  /** SCHEMA_INLINE_TOTAL_BYTES: the same measure, summed over the schemas compiled on the event loop (their heap). */
  inlineTotalBytes: number;
  /** SCHEMA_INLINE_MAX_STEPS: such a schema validates on the event loop while (paths + patternWork) x bytes is this. */
  inlineMaxSteps: number;
}

export const DEFAULT_SCHEMA_BUDGET: Readonly<SchemaBudgetSettings> = Object.freeze({
  compileTimeoutMs: 2000,
  validationTimeoutMs: 1000,
  threadHeapMb: 128,
  threads: 1,
  inlineMaxBytes: 4096,
  inlineTotalBytes: 2 * 1024 * 1024,
  inlineMaxSteps: 1_000_000,
});

/** A schema compiled within its budget: on the event loop, or in the schema threads, where `key` names it. */
type Compiled = { key: string; json: string; cost: SchemaCost } & (
  { where: 'inline'; validator: ArgumentsValidator } | { where: 'thread' }
);

type Verdict = { ok: true; compiled: Compiled } | { ok: false; reason: string; final: boolean };

/** A call's arguments as validated: with the schema's defaults applied, or what is wrong with them. */
export type ArgumentsVerdict =
  | { ok: true; value: unknown }
  | { ok: false; problems: string }
  /** The tool's schema cannot be used (an entry that was not admitted, or a thread that could not compile it). */
  | { ok: false; unusable: string }
  /** Not validated: this many validations already wait for the schema threads (SCHEMA_THREADS). */
  | { ok: false; busy: number };

type ThreadListener = (event: string, fields: Record<string, unknown>) => void;

/** An admission as remembered: with the compiled schema of an admitted entry. */
interface Judged {
  admission: Admission;
  compiled?: Compiled;
  /** The refusal says nothing of the entry (a thread failed for its own reasons): not remembered. */
  transient?: true;
}

export class SchemaBudget {
  readonly threads: SchemaThreads;
  /** Verdicts on schemas by the digest of their canonical JSON, least recently used first. */
  readonly #schemas = new Map<string, Promise<Verdict>>();
  /** Verdicts on whole entries by the digest of their JSON: the static checks are not repeated either. */
  readonly #entries = new Map<string, Promise<Judged>>();
  readonly #compiled = new WeakMap<CatalogEntry, Compiled>();
  readonly #kept: number;
  /** The size (JSON plus RE2 instructions) of the schemas compiled on the event loop, kept among the verdicts. */
  #inline = 0;
  /** The work admission does on the event loop, one piece at a time with a turn of the loop before each. */
  #turns: Promise<unknown> = Promise.resolve();

  readonly #threadListeners = new Set<ThreadListener>();

  constructor(
    readonly bounds: CatalogBounds,
    readonly settings: SchemaBudgetSettings,
  ) {
    this.threads = new SchemaThreads(settings, (event, fields) => {
      for (const listener of this.#threadListeners) listener(event, fields);
    });
    this.#kept = 2 * bounds.maxTools + 100;
  }

  /** Tells `listener` when a schema thread overran its budget or failed and was replaced (for the process's log). */
  onThreadEvent(listener: ThreadListener): () => void {
    this.#threadListeners.add(listener);
    return () => this.#threadListeners.delete(listener);
  }

  /** An entry read from the catalog (`raw`, published under `name`): admitted, its schema compiled, or refused. */
  async admitPublished(name: string, raw: string): Promise<Admission> {
    const key = `${name}\n${digest(raw)}`;
    const judged = await this.#remember(this.#entries, key, async () =>
      this.#judge(await this.#onLoop(() => admitPublishedEntry(name, raw, this.bounds))),
    );
    if (judged.transient) this.#entries.delete(key);
    return this.#admitted(judged);
  }

  /** An entry a worker is about to publish (its own tool's, or an upstream's): as every reader would judge it. */
  async admit(entry: CatalogEntry): Promise<Admission> {
    // The depth first: canonicalJson recurses.
    if (valueDepth(entry, this.bounds.maxDepth) > this.bounds.maxDepth) return admitEntryToPublish(entry, this.bounds);
    const key = await this.#onLoop(() => digest(canonicalJson(entry)));
    const judged = await this.#remember(this.#entries, key, async () =>
      this.#judge(await this.#onLoop(() => admitEntryToPublish(entry, this.bounds))),
    );
    if (judged.transient) this.#entries.delete(key);
    return this.#admitted(judged, entry);
  }

  /**
   * Validates a call's arguments against the entry's input schema (a copy of them, with its defaults applied): on
   * the event loop when that is cheap, else in a schema thread, where overrunning SCHEMA_VALIDATION_TIMEOUT_MS refuses
   * the call. `bytes`: the arguments' size as JSON when the caller knows it.
   */
  async validate(entry: CatalogEntry, args: unknown, bytes?: number): Promise<ArgumentsVerdict> {
    let compiled = this.#compiled.get(entry);
    if (!compiled) {
      const admission = await this.admit(entry);
      compiled = this.#compiled.get(entry);
      if (!admission.ok || !compiled)
        return { ok: false, unusable: admission.ok ? 'it was not compiled' : admission.reason };
    }
    const value = args ?? {};
    // The cost model counts paths down to this depth; the api's router refuses deeper requests anyway.
    if (valueDepth(value, MAX_ARGUMENTS_DEPTH) > MAX_ARGUMENTS_DEPTH) {
      return { ok: false, problems: `they are nested more than ${MAX_ARGUMENTS_DEPTH} levels deep` };
    }
    const { cost } = compiled;
    const steps = (cost.paths + cost.patternWork) * (bytes ?? JSON.stringify(value).length);
    if (compiled.where === 'inline' && steps <= this.settings.inlineMaxSteps) {
      const copy = structuredClone(value);
      const check = compiled.validator(copy);
      return check.ok ? { ok: true, value: copy } : check;
    }
    return validationVerdict(await this.threads.validate(compiled.key, compiled.json, value));
  }

  /**
   * Resolves once no work of admission waits for the event loop any more: what is still unsettled then waits for a
   * schema thread (a reader need not hold the other entries for it: ToolCatalog.readAll).
   */
  async loopSettled(): Promise<void> {
    for (let tail = this.#turns; ; tail = this.#turns) {
      await tail;
      // A turn's work may have queued the next step of its admission: wait for that one too.
      await new Promise((resolve) => setImmediate(resolve));
      if (tail === this.#turns) return;
    }
  }

  async close(): Promise<void> {
    await this.threads.close();
  }

  /** The remembered admission, for `entry` when it is another object of the same content. */
  #admitted(judged: Judged, entry?: CatalogEntry): Admission {
    const { admission, compiled } = judged;
    if (!admission.ok || !compiled) return admission;
    const admitted = entry ?? admission.entry;
    this.#compiled.set(admitted, compiled);
    return { ...admission, entry: admitted };
  }

  /** The last steps of admission: the schema is judged by the cost model and compiles within its budget. */
  async #judge(admission: Admission): Promise<Judged> {
    if (!admission.ok) return { admission };
    const { entry } = admission;
    const json = await this.#onLoop(() => canonicalJson(entry.inputSchema));
    const key = digest(json);
    const verdict = await this.#remember(
      this.#schemas,
      key,
      () => this.#compile(entry, json, key),
      (evicted) => {
        void evicted.then((old) => {
          if (old.ok && old.compiled.where === 'inline') this.#inline -= inlineSize(old.compiled);
        });
      },
    );
    if (verdict.ok) return { admission: { ...admission, cost: verdict.compiled.cost }, compiled: verdict.compiled };
    if (verdict.final) return { admission: { ok: false, reason: verdict.reason } };
    // A thread that failed for its own reasons says nothing of the schema: the next admission tries again.
    this.#schemas.delete(key);
    return { admission: { ok: false, reason: verdict.reason, transient: true }, transient: true };
  }

  /**
   * A schema of at most SCHEMA_INLINE_MAX_BYTES is judged on the event loop, and compiled there when its patterns
   * keep it within that size too and those compiled there stay within SCHEMA_INLINE_TOTAL_BYTES; any other is judged
   * and compiled in a schema thread.
   */
  async #compile(entry: CatalogEntry, json: string, key: string): Promise<Verdict> {
    const { inlineMaxBytes, inlineTotalBytes } = this.settings;
    if (json.length <= inlineMaxBytes) {
      const judged = await this.#onLoop(() => judgeArgumentsSchema(entry.inputSchema, this.bounds));
      if (!judged.ok) return { ok: false, reason: judged.reason, final: true };
      const { cost } = judged;
      const size = json.length + cost.patternSize;
      if (size <= inlineMaxBytes && this.#inline + size <= inlineTotalBytes) {
        this.#inline += size;
        try {
          const validator = await this.#onLoop(() => compileArgumentsSchema(entry.inputSchema, true));
          return { ok: true, compiled: { where: 'inline', key, json, cost, validator } };
        } catch (error) {
          this.#inline -= size;
          if (!(error instanceof SchemaError)) throw error;
          return { ok: false, reason: `its inputSchema cannot be used: ${error.message}`, final: true };
        }
      }
    }
    const outcome = await this.threads.compile(key, json, this.bounds);
    if (outcome.ok && outcome.cost) return { ok: true, compiled: { where: 'thread', key, json, cost: outcome.cost } };
    if ('refused' in outcome) return { ok: false, reason: outcome.refused, final: true };
    if (!('overrun' in outcome) || outcome.overrun === 'busy') {
      throw new Error('a schema thread answered a compile with something else');
    }
    if (outcome.overrun === 'crash') {
      return { ok: false, reason: `its inputSchema could not be compiled: ${outcome.message ?? ''}`, final: false };
    }
    const what = outcome.overrun === 'time' ? 'judging and compiling it took more than' : 'compiling it filled';
    return { ok: false, reason: `its inputSchema is over budget: ${what} ${outcome.limit}`, final: true };
  }

  /**
   * Runs `work` after the work queued before it, each after a turn of the event loop: however many entries a read
   * admits at once, requests are served between any two of them, not after all (immediates queued together run
   * together).
   */
  #onLoop<T>(work: () => T): Promise<T> {
    const turn = this.#turns.then(() => new Promise((resolve) => setImmediate(resolve))).then(work);
    this.#turns = turn.catch(() => undefined);
    return turn;
  }

  /** The value under `key`, made once and kept among the most recently used; `evict` hears of those let go. */
  #remember<T>(
    cache: Map<string, Promise<T>>,
    key: string,
    make: () => Promise<T>,
    evict: (value: Promise<T>) => void = () => undefined,
  ): Promise<T> {
    let value = cache.get(key);
    if (value) {
      cache.delete(key);
    } else {
      value = make();
      value.catch(() => cache.delete(key));
    }
    cache.set(key, value);
    for (const [old, evicted] of cache) {
      if (cache.size <= this.#kept) break;
      cache.delete(old);
      evict(evicted);
    }
    return value;
  }
}

function validationVerdict(outcome: ThreadOutcome): ArgumentsVerdict {
  if (outcome.ok) return { ok: true, value: outcome.value };
  if ('problems' in outcome) return { ok: false, problems: outcome.problems };
  if ('refused' in outcome) return { ok: false, unusable: outcome.refused };
  if (outcome.overrun === 'busy') return { ok: false, busy: outcome.waiting };
  if (outcome.overrun === 'crash') return { ok: false, unusable: `a schema thread failed: ${outcome.message ?? ''}` };
  const what = outcome.overrun === 'time' ? 'took more than' : 'filled';
  return {
    ok: false,
    problems: `validating them ${what} ${outcome.limit}${outcome.message ? ` (${outcome.message})` : ''}`,
  };
}

/** What a schema compiled on the event loop counts against SCHEMA_INLINE_TOTAL_BYTES. */
function inlineSize(compiled: Compiled): number {
  return compiled.json.length + compiled.cost.patternSize;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}
