// Calls that run a fixed while after they were queued unless cancelled first, all on one timer: the "Running on
// <worker>." note of a first attempt (RUNNING_NOTE_AFTER_MS) is queued for every job and cancelled by nearly all
// (most tools end sooner), so one Node timer per job, armed and cleared, was CPU spent for nothing.

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

  /** Cancels the call if it has not run yet. With nothing left pending, no timer stays armed. */
  cancel(entry: DelayedCall): void {
    if (entry.call === undefined) return;
    entry.call = undefined;
    if (--this.#pending === 0) this.#reset();
  }

  /** Calls queued and neither run nor cancelled yet. */
  get pending(): number {
    return this.#pending;
  }

  #arm(at: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(0, at - Date.now()));
  }

  #reset(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
    this.#head = 0;
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
    if (this.#pending === 0) this.#reset();
    else {
      if (this.#head > 1024) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#arm((this.#queue[this.#head] as DelayedCall).at);
    }
    for (const call of due) call();
  };
}
