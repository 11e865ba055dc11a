// Redis commands and round trips per task, by step, from MONITOR: one client runs sequential no-op tasks (create,
// then wait for the result, as the latency workload) while a MONITOR connection records every command with its
// connection and time. Commands inside a script count (they follow their EVALSHA from the "lua" source); a round
// trip is what one connection sends before it needs an answer: a command, a MULTI ... EXEC block, or a pipeline
// (commands of one connection that Redis read together, within PIPELINE_GAP_US of each other).
import type { Redis } from 'ioredis';
import { monitorRedis } from './monitor.ts';

/** Commands of one connection closer together than this were sent together (a pipeline or a MULTI). */
const PIPELINE_GAP_US = 30;

/**
 * Which side of the task a connection works for, by its connection name: the api (or the producer: the process
 * the client's requests reach, counted by request) or the worker.
 */
export type Role = 'api' | 'worker';

export interface StepCounts {
  commands: number;
  roundTrips: number;
}

export interface StepProfile {
  tasks: number;
  /** Per task, by step: the request creating the task, the one fetching its result, the worker, and the rest. */
  steps: Record<string, StepCounts>;
  /** Per task, by command name, over every step. */
  commands: Record<string, number>;
}

/** One monitored command: its time, its connection (`lua:<address>` inside that connection's script), its name. */
export interface Monitored {
  atUs: number;
  source: string;
  name: string;
}

/** A window of one request: its start and end, microseconds since the epoch. */
export interface Window {
  step: string;
  fromUs: number;
  toUs: number;
}

/** Microseconds since the epoch, from the high-resolution clock (MONITOR's timestamps are the same clock). */
export function nowUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * Runs `run` (which returns the request windows of the tasks it ran) under MONITOR, and counts per task: api
 * commands inside a window are that window's step, worker commands are the worker's step, api commands between
 * requests (BullMQ's timers, a QueueEvents reader catching up) are counted apart. `roleOf` gives a connection's process from its name.
 */
export async function profileSteps(
  redis: Redis,
  roleOf: (connectionName: string) => Role | undefined,
  run: () => Promise<{ tasks: number; windows: Window[] }>,
): Promise<StepProfile> {
  const seen: Monitored[] = [];
  let lastClient = '';
  const { host, port, username, password } = redis.options;
  const where = {
    host: host ?? '127.0.0.1',
    port: port ?? 6379,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  };
  const monitor = await monitorRedis(where, (time, source, command) => {
    const name = command.toLowerCase();
    // A script's commands come right after its EVALSHA, from "lua": they belong to the connection that sent it.
    const from = source === 'lua' ? `lua:${lastClient}` : source;
    if (source !== 'lua') lastClient = source;
    seen.push({ atUs: Math.round(Number(time) * 1e6), source: from, name });
  });
  let outcome;
  try {
    outcome = await run();
  } finally {
    // Let the last commands of the run reach the monitor before it closes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    monitor.close();
  }
  const names = await connectionNames(redis);
  const stepOf = (entry: Monitored): string | undefined => {
    const address = entry.source.replace(/^lua:/, '');
    const role = roleOf(names.get(address) ?? '');
    if (role === undefined) return undefined;
    if (role === 'worker') return 'worker';
    const window = outcome.windows.find((w) => entry.atUs >= w.fromUs && entry.atUs <= w.toUs);
    return window?.step ?? 'api, between requests';
  };
  const { steps, commands } = tallySteps(seen, stepOf);
  const per = (value: number) => value / outcome.tasks;
  return {
    tasks: outcome.tasks,
    steps: Object.fromEntries(
      Object.entries(steps).map(([step, c]) => [step, { commands: per(c.commands), roundTrips: per(c.roundTrips) }]),
    ),
    commands: Object.fromEntries(Object.entries(commands).map(([name, calls]) => [name, per(calls)])),
  };
}

/**
 * Commands and round trips by step, and commands by name, of monitored commands in order. A connection's command
 * is a new round trip unless it is inside a MULTI or reached Redis within PIPELINE_GAP_US of the end of that
 * connection's last work: its last command, or the last command of its last script (a script's own time is no
 * wait for an answer: a script and the command written after it in one write are one round trip).
 */
export function tallySteps(
  seen: readonly Monitored[],
  stepOf: (entry: Monitored) => string | undefined,
): { steps: Record<string, StepCounts>; commands: Record<string, number> } {
  const steps: Record<string, StepCounts> = {};
  const commands: Record<string, number> = {};
  const lastAt = new Map<string, number>();
  const inMulti = new Set<string>();
  for (const entry of seen) {
    const step = stepOf(entry);
    if (step === undefined) continue;
    const counts = (steps[step] ??= { commands: 0, roundTrips: 0 });
    counts.commands++;
    commands[entry.name] = (commands[entry.name] ?? 0) + 1;
    if (entry.source.startsWith('lua:')) {
      lastAt.set(entry.source.slice('lua:'.length), entry.atUs);
      continue;
    }
    const previous = lastAt.get(entry.source);
    lastAt.set(entry.source, entry.atUs);
    if (inMulti.has(entry.source)) {
      if (entry.name === 'exec' || entry.name === 'discard') inMulti.delete(entry.source);
      continue;
    }
    if (entry.name === 'multi') inMulti.add(entry.source);
    if (previous !== undefined && entry.atUs - previous <= PIPELINE_GAP_US) continue;
    counts.roundTrips++;
  }
  return { steps, commands };
}

/** CLIENT LIST: address -> connection name. */
async function connectionNames(redis: Redis): Promise<Map<string, string>> {
  const list = (await redis.call('CLIENT', 'LIST')) as string;
  const names = new Map<string, string>();
  for (const line of list.split('\n')) {
    const address = /(?:^| )addr=(\S+)/.exec(line)?.[1];
    const name = /(?:^| )name=(\S*)/.exec(line)?.[1];
    if (address) names.set(address, name ?? '');
  }
  return names;
}
