// Resources register their release as they are acquired and are released in reverse order, also when start-up
// fails half way.

export class CleanupStack {
  readonly #steps: { name: string; release: () => Promise<void> | void }[] = [];

  add<T>(name: string, resource: T, release: (resource: T) => Promise<void> | void): T {
    this.#steps.push({ name, release: () => release(resource) });
    return resource;
  }

  #releasing: Promise<void> | undefined;

  /**
   * Releases everything, newest first; a failing step is reported and the rest still run. A call while a release
   * runs joins it rather than starting a second loop: two loops would share out the steps, and the one that ran
   * out first would resolve while the other's steps were still being released (the bench's crash handler and its
   * failed start both release, and the first to finish exits the process).
   */
  releaseAll(onError: (name: string, error: unknown) => void = () => undefined): Promise<void> {
    this.#releasing ??= this.#releaseSteps(onError).finally(() => {
      this.#releasing = undefined;
    });
    return this.#releasing;
  }

  async #releaseSteps(onError: (name: string, error: unknown) => void): Promise<void> {
    while (this.#steps.length > 0) {
      const step = this.#steps.pop();
      if (!step) break;
      try {
        await step.release();
      } catch (error) {
        onError(step.name, error);
      }
    }
  }
}

/** Runs `stop` once on the first SIGINT or SIGTERM; a second signal exits at once. */
export function onShutdownSignal(stop: (signal: NodeJS.Signals) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    void stop(signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
