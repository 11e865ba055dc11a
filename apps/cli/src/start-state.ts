// Where a running `mcpt start` says which Redis it uses, and which Redis an operator command reads. `mcpt start`
// runs its own redis-server on a free port: without this note `mcpt overview` read 127.0.0.1:6379, another Redis or
// none, and showed it without a word. The note is one small JSON file per user, written when `mcpt start` is up and
// removed when it stops cleanly; a note whose process is gone (killed hard) is ignored.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { describeRedisTarget } from '@mcp-tasks/engine';

export interface StartState {
  /** The `mcpt start` process. */
  pid: number;
  /** Its REDIS_URL (its own redis-server's, unless one was given) or REDIS_CLUSTER_NODES, and REDIS_PREFIX. */
  redis: { REDIS_URL?: string; REDIS_CLUSTER_NODES?: string; REDIS_PREFIX?: string };
  /** Its MCP endpoint. */
  apiUrl: string;
  startedAt: string;
}

/**
 * The note's path: `$MCPT_STATE_DIR/start.json`, else `$XDG_RUNTIME_DIR/mcpt/start.json`, else
 * `<temp dir>/mcpt-<uid>/start.json`.
 */
export function startStatePath(env: NodeJS.ProcessEnv): string {
  const dir =
    nonEmpty(env['MCPT_STATE_DIR']) ??
    (nonEmpty(env['XDG_RUNTIME_DIR']) ? join(env['XDG_RUNTIME_DIR']!, 'mcpt') : undefined) ??
    join(tmpdir(), `mcpt-${userId()}`);
  return join(dir, 'start.json');
}

/** Writes the note of this `mcpt start` (replacing another's: the last one started is the one operators mean). */
export function writeStartState(state: StartState, env: NodeJS.ProcessEnv): string {
  const path = startStatePath(env);
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  // Written whole and renamed: a command reading meanwhile sees the old note or the new one, never half of one.
  const partial = `${path}.${state.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(partial, path);
  return path;
}

/** Removes the note if it is still `pid`'s (a later `mcpt start` may have replaced it). */
export function removeStartState(pid: number, env: NodeJS.ProcessEnv): void {
  const path = startStatePath(env);
  if (readState(path)?.pid === pid) rmSync(path, { force: true });
}

/** The note of a running `mcpt start`, if there is one; a missing, unreadable or stale one is none. */
export function readStartState(env: NodeJS.ProcessEnv): StartState | undefined {
  const state = readState(startStatePath(env));
  return state && isAlive(state.pid) ? state : undefined;
}

export interface RedisChoice {
  /** The environment the command runs with: REDIS_* of the running `mcpt start` added when it chose that Redis. */
  env: NodeJS.ProcessEnv;
  /** The line an operator command prints on stderr before it reads: which Redis, and why that one. */
  line: string;
}

/** REDIS_URL or REDIS_CLUSTER_NODES if set, else the Redis of a running `mcpt start`, else the default. */
export function chooseRedis(env: NodeJS.ProcessEnv): RedisChoice {
  const url = nonEmpty(env['REDIS_URL']);
  const nodes = nonEmpty(env['REDIS_CLUSTER_NODES']);
  if (nodes !== undefined) {
    return { env, line: `Redis: ${describeRedisTarget('', nodes)} (from REDIS_CLUSTER_NODES)` };
  }
  if (url !== undefined) return { env, line: `Redis: ${describeRedisTarget(url)} (from REDIS_URL)` };
  const started = readStartState(env);
  if (started) {
    const { REDIS_PREFIX, ...target } = started.redis;
    const chosen = { ...env, ...target, ...(nonEmpty(env['REDIS_PREFIX']) ? {} : { REDIS_PREFIX }) };
    const where = describeRedisTarget(target.REDIS_URL ?? '', target.REDIS_CLUSTER_NODES);
    return { env: chosen, line: `Redis: ${where} (from mcpt start, pid ${started.pid})` };
  }
  return { env, line: 'Redis: redis://127.0.0.1:6379 (the default: no REDIS_URL and no running mcpt start)' };
}

function readState(path: string): StartState | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<StartState>;
    if (!Number.isSafeInteger(parsed.pid) || typeof parsed.redis !== 'object' || parsed.redis === null)
      return undefined;
    return parsed as StartState;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH: gone. EPERM: a process of another user has that pid now, so the note's process is gone too.
    return false;
  }
}

function userId(): string {
  try {
    return String(userInfo().uid);
  } catch {
    return 'user';
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
