import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

const SEGMENT = 1 << 16;
/** Hand the event loop back this often, so lock renewal, cancellation and other jobs keep running. */
const YIELD_EVERY_MS = 20;

export const countPrimesTool = defineTool({
  name: 'count_primes',
  title: 'Count primes',
  description: 'Counts the primes below a bound with a segmented sieve: real CPU work, reported as progress.',
  inputSchema: z.object({
    below: z.number().int().min(0).max(2_000_000_000).describe('Count primes p with p < below'),
  }),
  taskSupport: TaskSupport.Required,
  async run({ below }, { signal, progress }) {
    const count = await countPrimesBelow(below, signal, (done) => progress(done, below));
    return {
      content: [{ type: 'text', text: `There are ${count} primes below ${below}.` }],
      structuredContent: { below, count },
    };
  },
});

/** Segmented sieve of Eratosthenes; memory stays O(sqrt(n) + segment). */
export async function countPrimesBelow(
  below: number,
  signal?: AbortSignal,
  onProgress?: (done: number) => Promise<void>,
): Promise<number> {
  if (below <= 2) return 0;
  const limit = Math.floor(Math.sqrt(below - 1));
  const small = simpleSieve(limit);
  const segment = new Uint8Array(SEGMENT);
  let count = 0;
  let lastYield = Date.now();
  for (let low = 2; low < below; low += SEGMENT) {
    const high = Math.min(low + SEGMENT, below);
    segment.fill(1, 0, high - low);
    for (const p of small) {
      if (p * p >= high) break;
      const start = Math.max(p * p, Math.ceil(low / p) * p);
      for (let m = start; m < high; m += p) segment[m - low] = 0;
    }
    for (let i = 0; i < high - low; i++) count += segment[i] as number;
    if (Date.now() - lastYield >= YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      await onProgress?.(high);
      lastYield = Date.now();
    }
  }
  return count;
}

function simpleSieve(limit: number): number[] {
  const composite = new Uint8Array(limit + 1);
  const primes: number[] = [];
  for (let i = 2; i <= limit; i++) {
    if (composite[i]) continue;
    primes.push(i);
    for (let j = i * i; j <= limit; j += i) composite[j] = 1;
  }
  return primes;
}
