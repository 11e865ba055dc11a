// The tasks this process runs right now, each with the controller that aborts its tool.

export const AbortReason = {
  Cancelled: 'cancelled',
  Shutdown: 'shutdown',
  Gone: 'gone',
  /** BullMQ could not renew the job's lock: another worker may run the job already (a later attempt). */
  LockLost: 'lock-lost',
  /** The run reached its tool's timeoutMs: it counts as a failed attempt (docs/scheduling.md). */
  Timeout: 'timeout',
  /** The tool parked on a wait (docs/durable-execution.md, "Waits"): its attempt is over, its task is not. */
  Parked: 'parked',
} as const;
export type AbortReason = (typeof AbortReason)[keyof typeof AbortReason];

export class RunningTasks {
  readonly #controllers = new Map<string, AbortController>();

  /**
   * The controller of a run starting now. Every way a run is stopped goes through this class (cancel message,
   * periodic check, lock loss, timeout, shutdown), so BullMQ's own per-job AbortSignal (fired only by
   * `Worker.cancelJob`, which the worker never calls) is not asked for: it would cost a second controller and a
   * listener per job.
   */
  start(taskId: string): AbortController {
    const controller = new AbortController();
    this.#controllers.set(taskId, controller);
    return controller;
  }

  /**
   * Forgets the task's controller, if it is still `controller`: a later attempt of the same job may have started in
   * this process while an aborted earlier one was still unwinding.
   */
  finish(taskId: string, controller: AbortController): void {
    if (this.#controllers.get(taskId) === controller) this.#controllers.delete(taskId);
  }

  /** Aborts the task's tool; false when it does not run here or was aborted already. */
  abort(taskId: string, reason: AbortReason): boolean {
    const controller = this.#controllers.get(taskId);
    if (!controller || controller.signal.aborted) return false;
    controller.abort(reason);
    return true;
  }

  abortAll(reason: AbortReason): void {
    for (const controller of this.#controllers.values()) controller.abort(reason);
  }

  ids(): string[] {
    return [...this.#controllers.keys()];
  }
}
