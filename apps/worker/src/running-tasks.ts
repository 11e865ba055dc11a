// The tasks this process runs right now, each with the controller that aborts its tool.

export const AbortReason = { Cancelled: 'cancelled', Shutdown: 'shutdown', Gone: 'gone' } as const;
export type AbortReason = (typeof AbortReason)[keyof typeof AbortReason];

export class RunningTasks {
  readonly #controllers = new Map<string, AbortController>();

  start(taskId: string, bullSignal: AbortSignal | undefined): AbortController {
    const controller = new AbortController();
    bullSignal?.addEventListener('abort', () => controller.abort(AbortReason.Cancelled), { once: true });
    this.#controllers.set(taskId, controller);
    return controller;
  }

  finish(taskId: string): void {
    this.#controllers.delete(taskId);
  }

  abort(taskId: string, reason: AbortReason): boolean {
    const controller = this.#controllers.get(taskId);
    if (!controller) return false;
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
