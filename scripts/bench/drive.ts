// Runs `total` operations over `lanes` concurrent loops, stopping early at a deadline, and times them.

export interface DriveResult {
  done: number;
  elapsedMs: number;
  /** True when the deadline cut the run short. */
  timedOut: boolean;
}

export async function drive(
  total: number,
  lanes: number,
  timeoutMs: number,
  operation: (index: number, lane: number) => Promise<void>,
  onProgress: (done: number, total: number) => void = () => undefined,
): Promise<DriveResult> {
  const started = performance.now();
  const deadline = started + timeoutMs;
  let next = 0;
  let done = 0;
  let timedOut = false;
  const lane = async (laneIndex: number) => {
    for (;;) {
      if (performance.now() > deadline) {
        timedOut = next < total;
        return;
      }
      const index = next++;
      if (index >= total) return;
      await operation(index, laneIndex);
      done++;
      onProgress(done, total);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(lanes, total)) }, (_, i) => lane(i)));
  return { done, elapsedMs: performance.now() - started, timedOut };
}
