// What one attempt of a tool keeps durably (docs/durable-execution.md): the checkpoint and step results an earlier
// attempt stored, read once before the tool runs (only when the record says there are some), and the writes of this
// attempt, each fenced by its number so that an attempt a later one has replaced can no longer write.
import { EMPTY_SNAPSHOT, type DurableSnapshot, type TaskStore } from '@mcp-tasks/engine';
import { LocalError, LocalErrorCode, type TaskRecord } from '@mcp-tasks/protocol';

/** The bounds of what a task keeps (worker settings DURABLE_MAX_BYTES, DURABLE_MAX_TOTAL_BYTES, DURABLE_MAX_STEPS). */
export interface DurableLimits {
  /** The most bytes of JSON one checkpoint or step result may take. */
  maxBytes: number;
  /** The most checkpoint, step results and child tasks one task may keep together. */
  maxEntries: number;
  /** The most bytes its checkpoint and step results may take together. */
  maxTotalBytes: number;
}

/** Step names and child call keys: what a tool names its durable work with. */
const MAX_NAME_LENGTH = 256;

export class DurableRun {
  /** The step names and child call keys this attempt has used (apart: a step and a call may share a name). */
  readonly #names = { step: new Set<string>(), 'child call': new Set<string>() };
  readonly #callCounts = new Map<string, number>();
  #childrenStarted = 0;

  constructor(
    private readonly store: Pick<TaskStore, 'durable'>,
    readonly task: Pick<TaskRecord, 'taskId' | 'durable'>,
    /** The attempt's number: its writes carry it (the fence). */
    readonly fence: number,
    readonly limits: DurableLimits,
    private readonly snapshot: DurableSnapshot = EMPTY_SNAPSHOT,
  ) {}

  /** The attempt's durable state: read from Redis only when `kept` (the task keeps some, as its record says). */
  static async open(
    store: Pick<TaskStore, 'durable'>,
    task: Pick<TaskRecord, 'taskId' | 'durable'>,
    fence: number,
    limits: DurableLimits,
    kept: boolean,
  ): Promise<DurableRun> {
    const snapshot = kept ? await store.durable.snapshot(task.taskId) : EMPTY_SNAPSHOT;
    return new DurableRun(store, task, fence, limits, snapshot);
  }

  /** The checkpoint an earlier attempt saved, as JSON has it; undefined when there is none. */
  get lastCheckpoint(): unknown {
    return fromJson(this.snapshot.checkpoint);
  }

  /** Whether the task has started child tasks (in this attempt or an earlier one): its end cancels those still running. */
  get hasChildren(): boolean {
    return this.#childrenStarted > 0 || this.snapshot.children.size > 0 || (this.task.durable?.children ?? 0) > 0;
  }

  async checkpoint(value: unknown): Promise<void> {
    const json = this.#json(value, 'checkpoint');
    await this.store.durable.save(this.task, {
      attempt: this.fence,
      kind: 'checkpoint',
      json,
      maxEntries: this.limits.maxEntries,
      maxTotalBytes: this.limits.maxTotalBytes,
    });
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    this.#claim(name, 'step');
    const stored = this.snapshot.steps.get(name);
    if (stored !== undefined) return fromJson(stored) as T;
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      // Nothing is stored: the step runs again in a later attempt, and may be tried again in this one.
      this.#names.step.delete(name);
      throw error;
    }
    const json = this.#json(result, `step '${name}'`);
    const saved = await this.store.durable.save(this.task, {
      attempt: this.fence,
      kind: 'step',
      name,
      json,
      maxEntries: this.limits.maxEntries,
      maxTotalBytes: this.limits.maxTotalBytes,
    });
    // An earlier attempt still running (it lost its lock) stored the step first: its result is the step's.
    return fromJson(saved.stored ? json : saved.value) as T;
  }

  /**
   * The key of a child call to `tool` in this attempt: `key` if given, else the tool's name and the count of its calls
   * so far (`summarize#3`), which names the same child in every attempt that makes its calls in the same order.
   */
  claimCall(tool: string, key: string | undefined): string {
    const count = (this.#callCounts.get(tool) ?? 0) + 1;
    this.#callCounts.set(tool, count);
    const callKey = key ?? `${tool}#${count}`;
    this.#claim(callKey, 'child call');
    return callKey;
  }

  /** Frees a call key whose child could not be started, so that the tool may try it again in this attempt. */
  releaseCall(callKey: string): void {
    this.#names['child call'].delete(callKey);
  }

  /** The child task an earlier attempt started under `callKey`, if any. */
  childOf(callKey: string): string | undefined {
    return this.snapshot.children.get(callKey);
  }

  /** A wait an earlier attempt stored under `key` (durable-waits.ts): its JSON, or undefined. */
  waitOf(key: string): string | undefined {
    return this.snapshot.waits.get(key);
  }

  /** Notes a child task started (or found) by this attempt. */
  childStarted(): void {
    this.#childrenStarted++;
  }

  /** Uses a name once per attempt: a second use is the tool's mistake, said so. */
  #claim(name: string, what: 'step' | 'child call'): void {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
      throw new LocalError(
        LocalErrorCode.InvalidInput,
        `A ${what} needs a name of 1 to ${MAX_NAME_LENGTH} characters, got ${JSON.stringify(name)}`,
        { taskId: this.task.taskId },
      );
    }
    const used = this.#names[what];
    if (used.has(name)) {
      throw new LocalError(
        LocalErrorCode.StepNameReused,
        `The ${what} name '${name}' is used twice in one attempt of task ${this.task.taskId}: each ${what} needs a ` +
          `name of its own (the name is how a later attempt finds its stored result)`,
        { taskId: this.task.taskId, name },
      );
    }
    used.add(name);
  }

  /** `value` as the JSON text stored, within DURABLE_MAX_BYTES. */
  #json(value: unknown, what: string): string {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      throw new LocalError(
        LocalErrorCode.InvalidInput,
        `The ${what} of task ${this.task.taskId} is not JSON: ${(error as Error).message}`,
        { taskId: this.task.taskId },
      );
    }
    // undefined (or a function) has no JSON: kept as the empty text, read back as undefined.
    const text = json ?? '';
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.limits.maxBytes) {
      throw new LocalError(
        LocalErrorCode.DurableTooLarge,
        `The ${what} of task ${this.task.taskId} takes ${bytes} bytes of JSON; at most ${this.limits.maxBytes} are ` +
          'kept (DURABLE_MAX_BYTES): keep a reference (a file, a row) instead of the data',
        { taskId: this.task.taskId, bytes, max: this.limits.maxBytes },
      );
    }
    return text;
  }
}

function fromJson(text: string | undefined): unknown {
  return text === undefined || text === '' ? undefined : JSON.parse(text);
}
