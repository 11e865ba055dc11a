// A task waiting for a human, or for its child tasks, must not pin a worker slot for hours. While a tool waits for the
// client or for a child task (ctx.callTool), the BullMQ worker's concurrency is raised by one so another job can run in
// the slot; waits have their own budget (WORKER_INPUT_WAIT_SLOTS), shared by the BullMQ workers of all the process's
// tool queues, and past it a waiting tool keeps its slot.

export interface Resizable {
  concurrency: number;
}

/** Lends slots of one BullMQ worker, out of the shared budget. */
export class SlotLender {
  #target: Resizable | undefined;

  constructor(private readonly budget: WaitBudget) {}

  attach(target: Resizable): void {
    this.#target = target;
  }

  /** Lends the slot of a tool that starts waiting; the returned function takes it back (once). */
  enter(): () => void {
    const target = this.#target;
    if (!target || !this.budget.take()) return () => undefined;
    target.concurrency += 1;
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.budget.give();
      target.concurrency = Math.max(1, target.concurrency - 1);
    };
  }
}

export class WaitBudget {
  #lent = 0;
  readonly #default = new SlotLender(this);

  constructor(private readonly slots: number) {}

  /** A lender for one more BullMQ worker (one per tool queue). */
  lender(): SlotLender {
    return new SlotLender(this);
  }

  attach(target: Resizable): void {
    this.#default.attach(target);
  }

  enter(): () => void {
    return this.#default.enter();
  }

  get lent(): number {
    return this.#lent;
  }

  take(): boolean {
    if (this.#lent >= this.slots) return false;
    this.#lent++;
    return true;
  }

  give(): void {
    this.#lent--;
  }
}

/**
 * The waits of one attempt (input requests, child tasks), lending its slot once however many run at once: a tool
 * that waits for ten children at a time frees one slot, the one it holds, not ten.
 */
export function attemptWaits(lender: { enter(): () => void }): { enter(): () => void } {
  let waiting = 0;
  let giveBack: (() => void) | undefined;
  return {
    enter() {
      if (waiting++ === 0) giveBack = lender.enter();
      let left = false;
      return () => {
        if (left) return;
        left = true;
        if (--waiting === 0) {
          giveBack?.();
          giveBack = undefined;
        }
      };
    },
  };
}
