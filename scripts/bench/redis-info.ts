// Reading Redis's own counters: commands by name (INFO commandstats), memory (INFO memory) and CPU (INFO cpu).
import type { Redis } from 'ioredis';

/** Parses INFO text into field -> value. */
export function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** `cmdstat_hset:calls=3,usec=...` lines -> { hset: 3, ... }. Commands run inside Lua scripts are counted too. */
export function parseCommandStats(text: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [field, value] of Object.entries(parseInfo(text))) {
    if (!field.startsWith('cmdstat_')) continue;
    const calls = /(?:^|,)calls=(\d+)/.exec(value);
    if (calls) counts[field.slice('cmdstat_'.length)] = Number(calls[1]);
  }
  return counts;
}

export async function commandStats(redis: Redis): Promise<Record<string, number>> {
  return parseCommandStats(await redis.info('commandstats'));
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(parseInfo(await redis.info('memory'))['used_memory']);
}

/** CPU seconds (user + system) the Redis server has used. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = parseInfo(await redis.info('cpu'));
  return Number(info['used_cpu_user']) + Number(info['used_cpu_sys']);
}

export async function redisVersion(redis: Redis): Promise<string> {
  return parseInfo(await redis.info('server'))['redis_version'] ?? 'unknown';
}

/** Sum of MEMORY USAGE over keys (SAMPLES 0: exact for hashes and sorted sets). */
export async function memoryUsage(redis: Redis, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
  const replies = (await pipeline.exec()) ?? [];
  return replies.reduce((total, [, value]) => total + (typeof value === 'number' ? value : 0), 0);
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** A key's kind: ids (UUIDs, numbers) replaced by `*`, e.g. `mcpt:task:*`, `bull-x:noop:*`. */
export function keyKind(key: string): string {
  return key.replace(UUID, '*').replace(/(^|:)\d+(?=:|$)/g, '$1*');
}

/** MEMORY USAGE summed by key kind over every key starting with `prefix` (SCAN, then pipelined MEMORY USAGE). */
export async function usageByKind(redis: Redis, prefix: string): Promise<Map<string, number>> {
  const usage = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 2000);
    cursor = next;
    if (keys.length === 0) continue;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    const replies = (await pipeline.exec()) ?? [];
    keys.forEach((key, i) => {
      const bytes = replies[i]?.[1];
      if (typeof bytes === 'number') usage.set(keyKind(key), (usage.get(keyKind(key)) ?? 0) + bytes);
    });
  } while (cursor !== '0');
  return usage;
}

/**
 * Bytes per task in the keys that grow with the number of tasks: everything but event streams, which are capped
 * (a session's stream at SESSION_STREAM_MAX_LENGTH events, BullMQ's at about 10k) and so cost per session or per
 * queue, not per stored task.
 */
export function storedPerTask(byKind: Record<string, number>): number {
  return Object.entries(byKind)
    .filter(([kind]) => !/(^|:)events$/.test(kind))
    .reduce((total, [, bytes]) => total + bytes, 0);
}
