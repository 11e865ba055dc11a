// A task waiting for a human must not pin a worker slot for hours. While a tool waits for the client, the BullMQ
// worker's concurrency is raised by one so another job can run in the slot; waits have their own budget
// (WORKER_INPUT_WAIT_SLOTS), and past it a waiting tool keeps its slot.

export interface Resizable {
  concurrency: number;
}

export class WaitBudget {
  #target: Resizable | undefined;
  #lent = 0;

  constructor(private readonly slots: number) {}

  attach(target: Resizable): void {
    this.#target = target;
  }

  get lent(): number {
    return this.#lent;
  }

  /** Lends the slot of a tool that starts waiting; the returned function takes it back (once). */
  enter(): () => void {
    const target = this.#target;
    if (!target || this.#lent >= this.slots) return () => undefined;
    this.#lent++;
    target.concurrency += 1;
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.#lent--;
      target.concurrency = Math.max(1, target.concurrency - 1);
    };
  }
}
