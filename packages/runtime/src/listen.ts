// Opening an HTTP listener with a sentence instead of a stack when its port is taken: the first thing a second
// `mcpt start` (or an api beside another program on port 3000) meets.
import { once } from 'node:events';
import type { Server } from 'node:net';
import { ConfigError } from './config.ts';

export interface ListenTarget {
  port: number;
  host: string;
  /** The variables that choose them, named in the message (PORT and HOST for the api). */
  portVariable: string;
  hostVariable: string;
}

/** Listens on `target`; a port in use (or not permitted) is a ConfigError whose message names the fix. */
export async function listenOn(server: Server, target: ListenTarget): Promise<void> {
  server.listen(target.port, target.host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const fix = `set ${target.portVariable} (or ${target.hostVariable}) to another value`;
    if (code === 'EADDRINUSE') throw new ConfigError(`port ${target.port} on ${target.host} is in use: ${fix}`);
    if (code === 'EACCES') throw new ConfigError(`port ${target.port} on ${target.host} is not permitted: ${fix}`);
    if (code === 'EADDRNOTAVAIL') {
      throw new ConfigError(`${target.host} is no address of this machine: set ${target.hostVariable}`);
    }
    throw error;
  }
}
