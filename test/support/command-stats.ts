// What a step costs in Redis commands: INFO commandstats of a Redis the test has to itself (commands run inside
// scripts included), as the bench counts them (scripts/bench/redis-info.ts).
import type { Redis } from 'ioredis';
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
