// Calls that run a fixed while after they were queued unless cancelled first, all on one timer: the "Running on
// <worker>." note of a first attempt (RUNNING_NOTE_AFTER_MS) is queued for every job and cancelled by nearly all
// (most tools end sooner), so one Node timer per job, armed and cleared, was CPU spent for nothing. One timer
// serves them all, armed at most once per delay while jobs run.

export interface DelayedCall {
  /** When it is due (ms since the epoch). */
  readonly at: number;
  /** Cleared once it ran or was cancelled. */
  call: (() => void) | undefined;
}

export class DelayedCalls {
  readonly #delayMs: number;
  /** Due times only grow (one delay for all): the queue is in the order the calls are due. */
  #queue: DelayedCall[] = [];
  #head = 0;
  #pending = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(delayMs: number) {
    this.#delayMs = delayMs;
  }

  /** Queues `call` to run `delayMs` from now; a call that throws is the caller's business (catch inside it). */
  add(call: () => void): DelayedCall {
    const entry: DelayedCall = { at: Date.now() + this.#delayMs, call };
    this.#queue.push(entry);
    this.#pending++;
    if (this.#timer === undefined) this.#arm(entry.at);
    return entry;
  }

  /**
   * Cancels the call if it has not run yet. The timer stays armed (it finds nothing to run and stops): jobs often
   * end one at a time, and clearing it each time nothing is pending would arm a new one for the next job again.
   */
  cancel(entry: DelayedCall): void {
    if (entry.call === undefined) return;
    entry.call = undefined;
    this.#pending--;
  }

  /** Calls queued and neither run nor cancelled yet. */
  get pending(): number {
    return this.#pending;
  }

  /** Unreferenced: a pending note never keeps the process alive (its job does, while it runs). */
  #arm(at: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(0, at - Date.now())).unref();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    const now = Date.now();
    const due: (() => void)[] = [];
    for (; this.#head < this.#queue.length; this.#head++) {
      const entry = this.#queue[this.#head] as DelayedCall;
      if (entry.call === undefined) continue;
      if (entry.at > now) break;
      due.push(entry.call);
      entry.call = undefined;
      this.#pending--;
    }
    if (this.#pending === 0) {
      this.#queue = [];
      this.#head = 0;
    } else {
      if (this.#head > 1024) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#arm((this.#queue[this.#head] as DelayedCall).at);
    }
    for (const call of due) call();
  };
}
