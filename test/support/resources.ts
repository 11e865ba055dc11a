// Everything a test acquires that outlives a function call (servers, processes, connections) is registered here
// with its release, so the root hook can release it and fail the run when a test forgot to.

interface Tracked {
  name: string;
  release: () => Promise<void> | void;
}

// One registry per process, not per module instance: mocha loads a test file that needs ESM-only packages
// through import(), which gives it its own instance of this module beside the one the root hook required, and a
// registry per instance hid that file's leftovers from the root hook.
const open: Set<Tracked> = ((globalThis as Record<symbol, unknown>)[Symbol.for('mcpt.test.resources')] ??=
  new Set<Tracked>()) as Set<Tracked>;

/** Registers a resource; call the returned function to release it (idempotent). */
export function track(name: string, release: () => Promise<void> | void): () => Promise<void> {
  const entry: Tracked = { name, release };
  open.add(entry);
  return async () => {
    if (!open.delete(entry)) return;
    await entry.release();
  };
}

/** The names of what is open now, oldest first. */
export function trackedNames(): string[] {
  return [...open].map((entry) => entry.name);
}

/** Releases whatever is still open, newest first, and returns the names of what was left. */
export async function releaseLeftovers(): Promise<string[]> {
  const left = [...open].reverse();
  open.clear();
  for (const entry of left) {
    try {
      await entry.release();
    } catch {
      // Best effort: the leak itself is what gets reported.
    }
  }
  return left.map((entry) => entry.name);
}
