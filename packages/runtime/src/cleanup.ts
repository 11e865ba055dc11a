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

/**
 * Stops what `starting` starts on the first SIGINT or SIGTERM, listening from before the start rather than after it:
 * until a process listens, a signal takes the default action and kills it with no cleanup at all, and whoever waits
 * for its "ready" line (an orchestrator, a test) may send one the moment it reads it. A signal during the start
 * waits for the start, then stops what it started.
 */
export function stopOnShutdownSignal<T>(
  starting: Promise<T>,
  stop: (started: T, signal: NodeJS.Signals) => Promise<void>,
): void {
  onShutdownSignal(async (signal) => stop(await starting, signal));
}
