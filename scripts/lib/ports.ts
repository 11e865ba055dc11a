// TCP ports for the processes our scripts and tests start on this machine: one place for "which port is free".
import { createServer } from 'node:net';

/** Ports this process handed out: never handed out twice, though a port's checker lets it go at once. */
const handedOut = new Set<number>();

/**
 * A TCP port free on `host` right now. Another process may take it before it is used, so `npm test`, which runs
 * its shards side by side, gives each shard its own range in MCPT_PORT_RANGE ("low-high", below the kernel's
 * ephemeral range, where the OS picks ports for listen(0) and outgoing connections): shards never pick the same
 * port. Without MCPT_PORT_RANGE the OS picks.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const range = portRange(process.env['MCPT_PORT_RANGE']);
  if (!range) return osPickedPort(host);
  const [low, high] = range;
  const span = high - low + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = low + ((start + i) % span);
    if (handedOut.has(port)) continue;
    // Taken before the check, so that calls side by side never check the same port; a busy one stays taken.
    handedOut.add(port);
    if (await portIsFree(port, host)) return port;
  }
  throw new Error(`MCPT_PORT_RANGE ${low}-${high}: no free port left on ${host}`);
}

function osPickedPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** "low-high" as two ports, or undefined when unset; anything else is an error naming the setting. */
export function portRange(value: string | undefined): [number, number] | undefined {
  if (value === undefined || value === '') return undefined;
  const match = /^(\d+)-(\d+)$/.exec(value.trim());
  const [low, high] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
  if (!(low >= 1024 && high <= 65535 && low <= high)) {
    throw new Error(`MCPT_PORT_RANGE must be "low-high" within 1024-65535, got '${value}'`);
  }
  return [low, high];
}

/** Whether `port` on `host` can be bound right now. */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
