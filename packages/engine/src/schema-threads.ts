// The schema threads (docs/catalog.md, "Budgets"): a small pool of worker threads that compile the published schemas
// the cost model does not rate cheap and validate arguments against them, so that no schema and no argument can hold
// a process's event loop or fill its heap. Each thread has a heap of its own (resourceLimits) and runs one job at a
// time under a deadline; a thread that overruns either is terminated and replaced, and its job answers which budget
// it exceeded. Threads start on first use, and an idle pool does not keep a process alive.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { SchemaBounds } from '@mcp-tasks/protocol';
import {
  SCHEMA_THREAD,
  type ThreadAnswer,
  type ThreadJob,
  type ThreadReply,
  type ThreadRequest,
} from './schema-thread.ts';

export interface SchemaThreadSettings {
  threads: number;
  /** Each thread's old-generation heap, in MB (resourceLimits.maxOldGenerationSizeMb). */
  threadHeapMb: number;
  compileTimeoutMs: number;
  validationTimeoutMs: number;
}

/** How a job ended: the thread's answer, or the budget it exceeded (the thread was terminated). */
export type ThreadOutcome =
  | ThreadReply
  | { ok: false; overrun: 'time' | 'memory' | 'crash'; limit: string; message?: string }
  /** Refused without waiting: this many validations already wait for a thread. */
  | { ok: false; overrun: 'busy'; waiting: number };

/** Jobs waiting for a thread; beyond, a validation is refused at once (a compile always waits: admissions are few). */
const MAX_WAITING_VALIDATIONS = 1000;

interface Pending {
  job: ThreadJob;
  deadlineMs: number;
  resolve(outcome: ThreadOutcome): void;
}

interface Slot {
  worker: Worker | undefined;
  ready: boolean;
  /** The keys whose validators the thread holds: a validation against another one is preceded by its compile. */
  held: Set<string>;
  running: { pending: Pending; timer: NodeJS.Timeout } | undefined;
}

export class SchemaThreads {
  readonly #waiting: Pending[] = [];
  readonly #slots: Slot[];
  #nextId = 1;
  #closed = false;

  constructor(
    private readonly settings: SchemaThreadSettings,
    private readonly onEvent: (event: string, fields: Record<string, unknown>) => void = () => undefined,
  ) {
    this.#slots = Array.from({ length: settings.threads }, () => ({
      worker: undefined,
      ready: false,
      held: new Set<string>(),
      running: undefined,
    }));
  }

  /**
   * Judges `schema` (JSON) by the cost model within `bounds` and compiles it, in a thread, within
   * SCHEMA_COMPILE_TIMEOUT_MS and SCHEMA_THREAD_HEAP_MB.
   */
  compile(key: string, schema: string, bounds: SchemaBounds): Promise<ThreadOutcome> {
    return this.#submit({ kind: 'compile', key, schema, bounds }, this.settings.compileTimeoutMs);
  }

  /**
   * Validates `args` (returned with the schema's defaults applied) within SCHEMA_VALIDATION_TIMEOUT_MS; a thread that
   * does not hold the schema compiles it first, within SCHEMA_COMPILE_TIMEOUT_MS.
   */
  validate(key: string, schema: string, args: unknown): Promise<ThreadOutcome> {
    if (this.#waiting.length >= MAX_WAITING_VALIDATIONS) {
      return Promise.resolve({ ok: false, overrun: 'busy', waiting: MAX_WAITING_VALIDATIONS });
    }
    return this.#submit({ kind: 'validate', key, schema, args }, this.settings.validationTimeoutMs);
  }

  /** Threads started now (tests and operators' figures). */
  get started(): number {
    return this.#slots.filter((slot) => slot.worker !== undefined).length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of this.#waiting.splice(0)) pending.resolve(crashed('the schema threads were closed'));
    await Promise.all(this.#slots.map((slot) => this.#stop(slot, crashed('the schema threads were closed'))));
  }

  #submit(job: ThreadRequest, deadlineMs: number): Promise<ThreadOutcome> {
    if (this.#closed) return Promise.resolve(crashed('the schema threads were closed'));
    return new Promise((resolve) => {
      this.#waiting.push({ job: { ...job, id: this.#nextId++ }, deadlineMs, resolve });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (this.#waiting.length === 0) break;
      if (slot.worker === undefined) this.#start(slot);
      if (!slot.ready || slot.running) continue;
      this.#run(slot, this.#loadFirst(slot, this.#waiting.shift() as Pending));
    }
  }

  /**
   * A validation in a thread that does not hold its schema is preceded by compiling it, under the compile deadline:
   * the validation's own deadline is for validating, whatever compiling took.
   */
  #loadFirst(slot: Slot, pending: Pending): Pending {
    const { job } = pending;
    if (job.kind !== 'validate' || slot.held.has(job.key)) return pending;
    return {
      job: { kind: 'load', key: job.key, schema: job.schema, id: this.#nextId++ },
      deadlineMs: this.settings.compileTimeoutMs,
      resolve: (outcome) => {
        if (!outcome.ok) {
          pending.resolve(outcome);
          return;
        }
        this.#waiting.unshift(pending);
      },
    };
  }

  #run(slot: Slot, pending: Pending): void {
    const { job } = pending;
    const timer = setTimeout(() => {
      this.onEvent('schema thread over its deadline: replaced', { kind: job.kind, ms: pending.deadlineMs });
      const limit =
        job.kind === 'validate'
          ? `SCHEMA_VALIDATION_TIMEOUT_MS (${this.settings.validationTimeoutMs})`
          : `SCHEMA_COMPILE_TIMEOUT_MS (${this.settings.compileTimeoutMs})`;
      void this.#stop(slot, { ok: false, overrun: 'time', limit });
    }, pending.deadlineMs);
    slot.running = { pending, timer };
    slot.worker?.ref();
    slot.worker?.postMessage(job);
  }

  #start(slot: Slot): void {
    const worker = new Worker(...threadEntry(this.settings.threadHeapMb));
    slot.worker = worker;
    slot.ready = false;
    slot.held = new Set();
    worker.on('message', (message: ThreadAnswer | { ready: true }) => {
      if (slot.worker !== worker) return;
      if ('ready' in message) {
        slot.ready = true;
      } else {
        this.#settle(slot, message);
      }
      this.#dispatch();
      if (!slot.running) worker.unref();
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (slot.worker !== worker) return;
      const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.onEvent('schema thread failed: replaced', { error: error.message });
      const outcome: ThreadOutcome = outOfMemory
        ? { ok: false, overrun: 'memory', limit: `SCHEMA_THREAD_HEAP_MB (${this.settings.threadHeapMb})` }
        : crashed(error.message);
      if (!slot.ready) {
        // It never started (a broken installation): what waits would only wait for the next one to fail too.
        for (const pending of this.#waiting.splice(0))
          pending.resolve(crashed(`a schema thread did not start: ${error.message}`));
      }
      void this.#stop(slot, outcome);
    });
    worker.on('exit', () => {
      if (slot.worker === worker) void this.#stop(slot, crashed('the schema thread exited'));
    });
  }

  #settle(slot: Slot, answer: ThreadAnswer): void {
    const running = slot.running;
    if (!running || running.pending.job.id !== answer.id) return;
    clearTimeout(running.timer);
    slot.running = undefined;
    slot.held.add(running.pending.job.key);
    for (const key of answer.evicted) slot.held.delete(key);
    const { id: _id, evicted: _evicted, ...reply } = answer;
    running.pending.resolve(reply);
  }

  /** Ends the slot's thread, answers its job with `outcome`, and starts another if jobs wait. */
  async #stop(slot: Slot, outcome: ThreadOutcome): Promise<void> {
    const { worker, running } = slot;
    slot.worker = undefined;
    slot.ready = false;
    slot.held = new Set();
    slot.running = undefined;
    if (running) {
      clearTimeout(running.timer);
      running.pending.resolve(outcome);
    }
    if (!this.#closed) this.#dispatch();
    await worker?.terminate().catch(() => undefined);
  }
}

function crashed(message: string): ThreadOutcome {
  return { ok: false, overrun: 'crash', limit: 'the schema thread', message };
}

/**
 * How to start a thread on schema-thread's code, beside this module: `.js` in the installed package (its bundle has
 * that entry), `.ts` from the sources, loaded through tsx as the process itself is (a thread does not inherit the
 * process's module hooks).
 */
function threadEntry(heapMb: number): ConstructorParameters<typeof Worker> {
  const typescript = import.meta.url.endsWith('.ts');
  const file = new URL(`./schema-thread.${typescript ? 'ts' : 'js'}`, import.meta.url);
  const options = { workerData: SCHEMA_THREAD, resourceLimits: { maxOldGenerationSizeMb: heapMb } };
  if (!typescript) return [file, options];
  // tsx's ESM API registers its hooks in this thread too (its `--import` loader does so on the main thread only).
  // require.resolve finds the API's CommonJS build; the ES module beside it is the one that works from a thread.
  const api = createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs');
  const code = `import(${JSON.stringify(pathToFileURL(api).href)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file.href)}); });`;
  return [code, { ...options, eval: true }];
}
