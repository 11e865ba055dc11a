// The BullMQ Worker of a tool queue, which asks for a next job as it settles one only while the queue has had more.
// It reaches into BullMQ's Worker (its private main loop queue, processJob's fetch callback, the drained flag's
// events): it lives with the rest of what depends on BullMQ's internals (docs/bullmq-upgrade.md).
import { Worker, type Job } from 'bullmq';

/** BullMQ's (private) AsyncFifoQueue of the main loop: its pending fetches and jobs, consumed as they settle. */
interface MainLoopQueue {
  add(promise: Promise<unknown>): void;
}

/**
 * BullMQ's Worker settles a job and, in the same script, tries to take the next one whenever a slot is free. On a
 * queue that was found empty that try fails, and a failed try costs about nine Redis commands (the wait list, the
 * prioritized set, the delayed set, the queue's meta and its counts): a tool queue's jobs mostly start as soon as
 * they are added, so its workers find it empty often (docs/benchmarks.md, "Fourth round").
 *
 * This Worker skips the try while its last look at the queue found it empty ('drained', until a job becomes
 * 'active' again). Nothing waits longer for it. A worker whose last look found nothing has a free slot, and its
 * blocking read waits on the queue's marker, which every added job sets and every job taken sets again (so that one
 * marker wakes the blocked workers one after the other while jobs are there). A worker without a free slot took its
 * last job with a look that found one, so it keeps the try. A queue with jobs waiting keeps it too.
 *
 * A queue with a global concurrency (a tool's `concurrency`) keeps it as well: a look at a queue at its limit finds
 * nothing either, and there the try as a job settles is what starts the next job (no marker is set for it).
 */
export class ToolQueueWorker<DataType = unknown, ResultType = unknown> extends Worker<DataType, ResultType> {
  #foundEmpty = false;
  readonly #limited: () => boolean;

  /** `limited`: whether the queue has (or may still have) a global concurrency, asked as each job settles. */
  constructor(
    name: string,
    processor: ConstructorParameters<typeof Worker<DataType, ResultType>>[1],
    options: ConstructorParameters<typeof Worker<DataType, ResultType>>[2],
    limited: () => boolean,
  ) {
    super(name, processor, options);
    this.#limited = limited;
    // Both events follow BullMQ's own (private) drained flag: 'drained' where it is set, 'active' for the job whose
    // look cleared it (a turn later, after a job scheduler's step; a try made in between is only one more try).
    this.on('drained', () => {
      this.#foundEmpty = true;
    });
    this.on('active', () => {
      this.#foundEmpty = false;
    });
  }

  override get concurrency(): number {
    return super.concurrency;
  }

  /**
   * A raised concurrency (a slot lent by a waiting tool, the worker's wait-budget.ts) takes effect at once. BullMQ's main loop
   * looks at it only when one of its jobs or fetches settles: with every slot busy, and the job in the slot waiting
   * for its children or its client, none would, and a worker of concurrency 1 would wait forever for a child of its
   * own queue. A settled, empty entry in the loop's queue wakes it: it finds no job there, and, seeing a free slot,
   * fetches one (BullMQ 6.7.0's Worker.mainLoop, the version job-layout.ts pins).
   */
  override set concurrency(concurrency: number) {
    const raised = concurrency > super.concurrency;
    super.concurrency = concurrency;
    if (raised) (this as unknown as { mainLoopQueue?: MainLoopQueue | null }).mainLoopQueue?.add(Promise.resolve());
  }

  /**
   * Runs BullMQ's stalled-job check of the queue now rather than at its next interval: the jobs of a gone worker were
   * just released to it (lost-jobs.ts in the engine deleted their locks, put them in the stalled set and cleared the
   * check's interval key), and it moves them back to wait as any stalled job, counting the stall. BullMQ's
   * startStalledCheckTimer runs one check at once and restarts the interval from there (BullMQ 6.7.0, the version
   * job-layout.ts pins).
   */
  checkStalledNow(): Promise<void> {
    return this.startStalledCheckTimer();
  }

  /** Whether settling a job now would also try to take the next one (given a free slot). */
  get fetchesNextOnSettle(): boolean {
    return !this.#foundEmpty || this.#limited();
  }

  override processJob(
    job: Job<DataType, ResultType, string>,
    token: string,
    fetchNextCallback: () => boolean = () => true,
  ): ReturnType<Worker<DataType, ResultType>['processJob']> {
    return super.processJob(job, token, () => fetchNextCallback() && this.fetchesNextOnSettle);
  }
}
