// What a step costs in Redis commands: INFO commandstats of a Redis the test has to itself (commands run inside
// scripts included), as the bench counts them (scripts/bench/redis-info.ts).
import type { Redis } from 'ioredis';
import { monitorRedis } from '../../scripts/bench/monitor.ts';
import { commandStats } from '../../scripts/bench/redis-info.ts';

/** Commands run since the last CONFIG RESETSTAT, by name, leaving out the INFO and CONFIG of the counting itself. */
export async function commandCalls(inspect: Redis): Promise<Record<string, number>> {
  const calls = await commandStats(inspect);
  for (const name of Object.keys(calls)) if (/^(info|config)/.test(name)) delete calls[name];
  return calls;
}

/** Commands Redis ran while `body` ran, by name. */
export async function commandsDuring(inspect: Redis, body: () => Promise<unknown>): Promise<Record<string, number>> {
  await inspect.config('RESETSTAT');
  await body();
  return commandCalls(inspect);
}

/** One command Redis ran, as MONITOR shows it: who sent it (`lua` inside a script) and its name, lowercase. */
export interface SeenCommand {
  source: string;
  name: string;
}

/**
 * The commands Redis ran while `body` ran, in order, as MONITOR shows them (scripts/bench/monitor.ts), leaving out
 * `inspect`'s own: a command sent by a client (not `lua`) is one it waited for, so a request's round trips are its
 * commands that are not `lua` (none of ours is pipelined on one request's path but a MULTI, counted by its EXEC).
 * MONITOR shows commands in the order Redis ran them, so once it shows an ECHO `inspect` sends after `body`, it has
 * shown every command `body` waited for: no sleep guesses how long the feed lags behind the replies.
 */
export async function monitoredDuring(inspect: Redis, body: () => Promise<unknown>): Promise<SeenCommand[]> {
  const own = /(?:^| )addr=(\S+)/.exec(String(await inspect.call('CLIENT', 'INFO')))?.[1];
  const seen: SeenCommand[] = [];
  let caughtUp!: () => void;
  const marker = new Promise<void>((resolve) => (caughtUp = resolve));
  const { host, port } = inspect.options;
  const monitor = await monitorRedis({ host: host ?? '127.0.0.1', port: port ?? 6379 }, (_, source, command) => {
    const name = command.toLowerCase();
    if (source !== own) seen.push({ source, name });
    else if (name === 'echo') caughtUp();
  });
  try {
    await body();
    await inspect.call('ECHO', 'monitoredDuring: caught up');
    await marker;
  } finally {
    monitor.close();
  }
  return seen;
}
