// Our Redis scripts, registered one way (BullMQ's scripts.ts is the model): every file in lua/ is named
// `<command>-<numberOfKeys>.lua` and opens with a header listing its KEYS, ARGV and return values. This module
// loads them all, defines them on a connection once (EVALSHA, falling back to EVAL), and is the only code that
// puts their keys and arguments in order: callers pass named keys and values. A script whose header declares
// `KEYS[<numberOfKeys + 1>...]` also takes a variable number of keys after its named ones (keys it is given, so
// that it never touches a key it did not declare). A line `--- @include "<name>"` is replaced by
// `lua/include/<name>.lua` (BullMQ's scripts include theirs the same way): Lua code shared by several scripts.
import { readdirSync, readFileSync } from 'node:fs';
import type { TaskStatus } from '@mcp-tasks/protocol';
import type { RedisClient } from './redis.ts';

const LUA_DIR = new URL('./lua/', import.meta.url);
const INCLUDE_DIR = new URL('./include/', LUA_DIR);
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;
const FILE_NAME = /^([a-z]+(?:-[a-z]+)*)-(\d+)\.lua$/;
const MORE_KEYS = /KEYS\[(\d+)\.\.\.\]/;

interface ScriptFile {
  /** The keys it always takes. */
  numberOfKeys: number;
  /** It takes more keys after those (its header declares `KEYS[numberOfKeys + 1...]`). */
  moreKeys: boolean;
  lua: string;
}

/** Every script by command name (`create-task-6.lua` -> `createTask`). */
const SCRIPTS: ReadonlyMap<string, ScriptFile> = new Map(
  readdirSync(LUA_DIR, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map(({ name: file }) => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new Error(`Lua script '${file}' must be named <command>-<numberOfKeys>.lua`);
      const command = (match[1] as string).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
      const numberOfKeys = Number(match[2]);
      const lua = readFileSync(new URL(file, LUA_DIR), 'utf8').replace(INCLUDE, (_, name: string) =>
        readFileSync(new URL(`${name}.lua`, INCLUDE_DIR), 'utf8'),
      );
      const more = MORE_KEYS.exec(lua.slice(0, lua.indexOf(']]')));
      if (more && Number(more[1]) !== numberOfKeys + 1) {
        throw new Error(`Lua script '${file}': more keys start at KEYS[${numberOfKeys + 1}], not KEYS[${more[1]}]`);
      }
      return [command, { numberOfKeys, moreKeys: more !== null, lua }];
    }),
);

type Command = (...keysThenArgs: (string | number)[]) => Promise<unknown>;

export interface CreateTaskCall {
  keys: {
    record: string;
    live: string;
    allTasks: string;
    expiries: string;
    ownerIndex: string;
    ownerLive: string;
  };
  taskId: string;
  expiresAt: number;
  now: number;
  /** The most unfinished tasks the owner may have, this one included; undefined: no cap. */
  maxLive: number | undefined;
  member: string;
  /** Listed in the owner's index (a task, not a plain call). */
  listed: boolean;
  expiryEntry: string;
  /** The tool's fair order between principals: the job's priority is computed in the same step. */
  fair?: FairOrderCall;
  /** Opens the request in the same step (a session whose fields the caller holds): see OpenRequestCall. */
  open?: OpenRequestCall;
  /** The task's BullMQ job, added in the same step with the priority of `fair` (required with it). */
  job?: ScriptedJob;
  fields: Record<string, string>;
}

/**
 * A job of one of our tool queues as create-task-6.lua adds it: what BullMQ's `queue.add` would write for the same
 * name, data and options, but for the priority, which the script computes (the fair order) and adds itself.
 */
export interface ScriptedJob {
  keys: {
    /** The job hash (BullMQ: `<prefix>:<queue>:<jobId>`). */
    job: string;
    marker: string;
    meta: string;
    active: string;
    events: string;
    /** The priority counter: the second part of a prioritized job's score. */
    priorityCounter: string;
  };
  name: string;
  /** JSON of the job data, as BullMQ stores it. */
  data: string;
  /** JSON of the stored (encoded) options without `priority`: the script adds it. */
  opts: string;
  /** The job's timestamp, epoch ms. */
  timestamp: number;
}

/** What the fair priority of a principal's new job for a tool needs (docs/scheduling.md, "Fairness"). */
export interface FairOrderCall {
  keys: {
    /** The tool's hash: principal -> priority of its last queued job, and the virtual time. */
    fairQueue: string;
    /** The tool queue's waiting prioritized jobs (BullMQ's). */
    prioritized: string;
  };
  principal: string;
  /** Priority steps per job (a whole number >= 1). */
  step: number;
  /** The largest priority BullMQ accepts. */
  maxPriority: number;
}

export interface TransitionCall {
  keys: {
    record: string;
    live: string;
    events: string;
    ownerLive: string;
    /** The task's outstanding input request ids. */
    inputs: string;
    /** The session's input requests waiting for its client. */
    sessionInputs: string;
    /** The input request hashes to withdraw, in the order of `begin.withdraw` (only when `begin` is set). */
    withdrawn: readonly string[];
  };
  taskId: string;
  to: TaskStatus;
  from: readonly TaskStatus[];
  now: number;
  statusMessage: string | undefined;
  /** JSON of the outcome to store; undefined leaves it as it is. */
  outcome: string | undefined;
  terminal: boolean;
  /** The prefix of the api replicas' channels (KeySpace.replicaChannel('')): waiters are told on theirs. */
  waiterChannels: string;
  sessionChannel: string;
  stream: { idleMs: number; maxLength: number };
  /** An input request asked (1) or answered or abandoned (-1). */
  input: { requestId: string; delta: 1 | -1 } | undefined;
  /** The worker attempt making the move; undefined: not fenced. */
  attempt: number | undefined;
  /** This move starts `attempt`: the requests outstanding are withdrawn (ids, and the notice to send for each). */
  begin: { withdraw: readonly { requestId: string; notice: string }[] } | undefined;
  /** What the caller read; the move is refused when the record changed since. */
  unchangedSince: { lastUpdatedAt: number; external: boolean } | undefined;
}

export type TransitionReply =
  | { verdict: 'ok'; status: TaskStatus; lastUpdatedAt: number }
  | { verdict: 'unchanged'; status: TaskStatus; lastUpdatedAt: number }
  | { verdict: 'missing' }
  | { verdict: 'rejected'; current: TaskStatus }
  | { verdict: 'stale'; current: TaskStatus; attempt: number }
  | { verdict: 'changed'; current: TaskStatus }
  | { verdict: 'withdraw'; requestIds: string[] };

/** One rate-limit bucket of a request: `hit` counts the request, `check` only refuses when the bucket is full. */
export interface RateBucket {
  key: string;
  /** 0: the bucket is not used. */
  limit: number;
  mode: 'hit' | 'check';
}

export interface TouchSessionCall {
  keys: { session: string; counters: string };
  /** Exactly four, in the order of RateScope. */
  buckets: readonly RateBucket[];
  idleMs: number;
  windowMs: number;
  /** The security counters a refusal by a `hit` and by a `check` bucket increments. */
  refusalCounters: { hit: string; check: string };
  /** The caller holds the session's fields: only its existence is checked (and its timer restarted). */
  known?: boolean;
}

/**
 * A request of a session whose fields the caller holds, opened by the method's own script (create-task-6.lua,
 * get-owned-1.lua) as touch-session-6.lua would: its timer restarted and the request counted, in the method's step.
 */
export type OpenRequestCall = Omit<TouchSessionCall, 'known'>;

/** How the opening of a request went: 0 it may proceed, -1 its session is gone, 1..4 the bucket that refused it. */
export type Opened = number;

function openRequestKeys(call: OpenRequestCall): string[] {
  return [call.keys.session, ...call.buckets.map((bucket) => bucket.key), call.keys.counters];
}

function openRequestArgs(call: OpenRequestCall): (string | number)[] {
  return [
    call.idleMs,
    call.windowMs,
    ...call.buckets.flatMap((bucket) => [bucket.limit, bucket.mode]),
    call.refusalCounters.hit,
    call.refusalCounters.check,
  ];
}

/** The 12 arguments of an opening, or as many blanks. */
const NO_OPENING: readonly string[] = Array.from({ length: 12 }, () => '');

export interface CreateSessionCall {
  keys: {
    session: string;
    /** The live sessions of the session's owner and of its client address (sorted sets, for the caps). */
    ownerSessions: string;
    addressSessions: string;
    counters: string;
  };
  /** Exactly two `hit` buckets: the principal's and the address's initialize budgets. */
  buckets: readonly RateBucket[];
  sessionId: string;
  now: number;
  idleMs: number;
  /** When the new session stops counting under the caps unless used, epoch ms. */
  countedUntil: number;
  windowMs: number;
  /** The most live sessions of the owner and of the address; 0: no cap. */
  maxPerOwner: number;
  maxPerAddress: number;
  /** The security counters a refusal by a rate limit and by a cap increments. */
  refusalCounters: { rate: string; cap: string };
  fields: Record<string, string>;
}

export class RedisScripts {
  static readonly #byConnection = new WeakMap<RedisClient, RedisScripts>();

  /** The scripts on `redis`, defined on that connection the first time it is asked for. */
  static on(redis: RedisClient): RedisScripts {
    let scripts = RedisScripts.#byConnection.get(redis);
    if (!scripts) {
      scripts = new RedisScripts(redis);
      RedisScripts.#byConnection.set(redis, scripts);
    }
    return scripts;
  }

  readonly #redis: RedisClient;

  private constructor(redis: RedisClient) {
    for (const [command, { numberOfKeys, moreKeys, lua }] of SCRIPTS) {
      if (command in redis) throw new Error(`Script '${command}' would shadow a method of the Redis client`);
      // Without numberOfKeys, ioredis takes the key count as the first argument of each call.
      redis.defineCommand(command, moreKeys ? { lua } : { numberOfKeys, lua });
    }
    this.#redis = redis;
  }

  /**
   * create-task-6.lua: the record and its index entries, after the owner's cap admits it, and with `fair` the
   * job's priority (0 without), and with `job` the job itself (with that priority). With `open`, the request is
   * opened first: `opened` is not 0 when that refused it (then nothing was written).
   */
  async createTask(
    call: CreateTaskCall,
  ): Promise<{ opened: Opened; admitted: boolean; count: number; priority: number }> {
    const { keys, fair, open, job } = call;
    if (job && !fair) throw new Error('createTask: a job is added only with its fair priority');
    const [admitted, count, priority] = (await this.#run(
      'createTask',
      [
        keys.record,
        keys.live,
        keys.allTasks,
        keys.expiries,
        keys.ownerIndex,
        keys.ownerLive,
        ...(fair ? [fair.keys.fairQueue, fair.keys.prioritized] : []),
        ...(job
          ? [job.keys.job, job.keys.marker, job.keys.meta, job.keys.active, job.keys.events, job.keys.priorityCounter]
          : []),
        ...(open ? openRequestKeys(open) : []),
      ],
      [
        call.taskId,
        call.expiresAt,
        call.now,
        call.maxLive === undefined ? '' : call.maxLive,
        call.member,
        call.listed ? '1' : '0',
        call.expiryEntry,
        fair?.principal ?? '',
        fair?.step ?? '',
        fair?.maxPriority ?? '',
        open ? '1' : '0',
        ...(open ? openRequestArgs(open) : NO_OPENING),
        job ? '1' : '0',
        job?.name ?? '',
        job?.data ?? '',
        job?.opts ?? '',
        job?.timestamp ?? '',
        ...Object.entries(call.fields).flat(),
      ],
    )) as [number, number, number?];
    if (admitted === -1) return { opened: count, admitted: false, count: 0, priority: 0 };
    return { opened: 0, admitted: admitted === 1, count, priority: priority ?? 0 };
  }

  /** transition-6.lua: one atomic move along the state machine, with its status event. */
  async transition(call: TransitionCall): Promise<TransitionReply> {
    const { keys, begin, unchangedSince } = call;
    const withdraw = begin?.withdraw ?? [];
    if (withdraw.length !== keys.withdrawn.length) throw new Error('transition: one key per request to withdraw');
    const [verdict, a, b, ...rest] = (await this.#run(
      'transition',
      [keys.record, keys.live, keys.events, keys.ownerLive, keys.inputs, keys.sessionInputs, ...keys.withdrawn],
      [
        call.to,
        `,${call.from.join(',')},`,
        call.now,
        call.statusMessage ?? '',
        call.outcome ?? '',
        call.terminal ? '1' : '0',
        call.waiterChannels,
        call.taskId,
        call.sessionChannel,
        call.stream.idleMs,
        call.stream.maxLength,
        call.input?.delta ?? 0,
        call.input?.requestId ?? '',
        call.attempt ?? '',
        begin ? '1' : '0',
        unchangedSince?.lastUpdatedAt ?? '',
        unchangedSince ? (unchangedSince.external ? '1' : '0') : '',
        ...withdraw.flatMap(({ requestId, notice }) => [requestId, notice]),
      ],
    )) as [string, string?, string?, ...string[]];
    switch (verdict) {
      case 'ok':
      case 'unchanged':
        return { verdict, status: a as TaskStatus, lastUpdatedAt: Number(b) };
      case 'missing':
        return { verdict };
      case 'stale':
        return { verdict, current: a as TaskStatus, attempt: Number(b) };
      case 'changed':
        return { verdict, current: a as TaskStatus };
      case 'withdraw':
        return { verdict, requestIds: [a, b, ...rest].filter((id) => id !== undefined) };
      default:
        return { verdict: 'rejected', current: a as TaskStatus };
    }
  }

  /** claim-expired-1.lua: up to `limit` entries due at `now`, held by this caller until `leaseEnd`. */
  async claimExpired(call: {
    keys: { expiries: string };
    now: number;
    limit: number;
    leaseEnd: number;
  }): Promise<string[]> {
    return (await this.#run('claimExpired', [call.keys.expiries], [call.now, call.limit, call.leaseEnd])) as string[];
  }

  /**
   * get-owned-1.lua: the record's fields when `owner` owns it; an unfinished task records `watcher` (a replica's
   * id) as one of its waiters in the same step. With `open`, the request is opened first: `opened` is not 0 when
   * that refused it (then nothing was read).
   */
  async getOwned(call: {
    keys: { record: string };
    owner: string;
    watcher?: string;
    open?: OpenRequestCall;
  }): Promise<{ opened: Opened; fields: Record<string, string> | undefined }> {
    const { open } = call;
    const [opened, ...flat] = (await this.#run(
      'getOwned',
      [call.keys.record, ...(open ? openRequestKeys(open) : [])],
      [call.owner, call.watcher ?? '', ...(open ? openRequestArgs(open) : [])],
    )) as [number, ...string[]];
    return { opened: Number(opened), fields: flat.length === 0 ? undefined : hashOf(flat) };
  }

  /** mark-external-1.lua: records where a live task's work runs. */
  async markExternal(call: {
    keys: { record: string };
    ref: string;
  }): Promise<{ verdict: 'ok' | 'missing' | 'terminal'; status?: string }> {
    const [verdict, status] = (await this.#run('markExternal', [call.keys.record], [call.ref])) as [
      'ok' | 'missing' | 'terminal',
      string?,
    ];
    return status === undefined ? { verdict } : { verdict, status };
  }

  /** answer-input-1.lua: 1 accepted, 0 no such request for this session or owner, 2 answered already. */
  async answerInput(call: {
    keys: { request: string };
    sessionId: string;
    owner: string;
    answer: string;
    channel: string;
  }): Promise<number> {
    return (await this.#run(
      'answerInput',
      [call.keys.request],
      [call.sessionId, call.owner, call.answer, call.channel],
    )) as number;
  }

  /** claim-delivery-1.lua: whether streams of kind `via` deliver the input request. */
  async claimDelivery(call: { keys: { request: string }; via: 'get' | 'result' }): Promise<boolean> {
    return (await this.#run('claimDelivery', [call.keys.request], [call.via])) === 1;
  }

  /**
   * touch-session-6.lua: the session's fields with its idle timer restarted and the request counted, and the number
   * (1..4) of the bucket that refused it (0: none); undefined when there is no such session.
   */
  async touchSession(call: TouchSessionCall): Promise<{ refused: number; fields: Record<string, string> } | undefined> {
    const reply = (await this.#run('touchSession', openRequestKeys(call), [
      ...openRequestArgs(call),
      call.known ? '1' : '0',
    ])) as (number | string)[];
    if (reply.length === 0) return undefined;
    const [refused, ...flat] = reply;
    return { refused: Number(refused), fields: hashOf(flat) };
  }

  /**
   * create-session-6.lua: stores the session after its initialize rate limits and the caps on live sessions admit
   * it. `refused`: 0 created, 1 or 2 the principal's or the address's rate limit, 3 or 4 the owner's or the
   * address's cap (`count`: the live sessions it holds).
   */
  async createSession(call: CreateSessionCall): Promise<{ refused: number; count: number }> {
    const { keys, buckets } = call;
    const [refused, count] = (await this.#run(
      'createSession',
      [keys.session, keys.ownerSessions, keys.addressSessions, ...buckets.map((bucket) => bucket.key), keys.counters],
      [
        call.sessionId,
        call.now,
        call.idleMs,
        call.countedUntil,
        call.windowMs,
        ...buckets.map((bucket) => bucket.limit),
        call.refusalCounters.rate,
        call.maxPerOwner,
        call.maxPerAddress,
        call.refusalCounters.cap,
        ...Object.entries(call.fields).flat(),
      ],
    )) as [number, number];
    return { refused: Number(refused), count: Number(count) };
  }

  /** refresh-session-3.lua: keeps a session in use counted under its caps; false when the session is gone. */
  async refreshSession(call: {
    keys: { session: string; ownerSessions: string; addressSessions: string };
    sessionId: string;
    countedUntil: number;
  }): Promise<boolean> {
    const { keys } = call;
    const refreshed = await this.#run(
      'refreshSession',
      [keys.session, keys.ownerSessions, keys.addressSessions],
      [call.sessionId, call.countedUntil],
    );
    return refreshed === 1;
  }

  /** record-failed-lookup-3.lua: counts a failed lookup; the principal bucket's count. */
  async recordFailedLookup(call: {
    keys: { principalBucket: string; addressBucket: string; counters: string };
    windowMs: number;
    counter: string;
  }): Promise<number> {
    const { keys } = call;
    return (await this.#run(
      'recordFailedLookup',
      [keys.principalBucket, keys.addressBucket, keys.counters],
      [call.windowMs, call.counter],
    )) as number;
  }

  /** acquire-connection-slot-1.lua: a lease on one of the session's stream slots, if one is free. */
  async acquireConnectionSlot(call: {
    keys: { streams: string };
    streamId: string;
    now: number;
    leaseMs: number;
    limit: number;
  }): Promise<{ opened: boolean; count: number }> {
    const [opened, count] = (await this.#run(
      'acquireConnectionSlot',
      [call.keys.streams],
      [call.streamId, call.now, call.leaseMs, call.limit],
    )) as [number, number];
    return { opened: opened === 1, count };
  }

  /** publish-catalog-2.lua: a worker's catalog entries, unless one conflicts with a live definition. */
  async publishCatalog(call: {
    keys: { tools: string; seen: string };
    now: number;
    liveAfter: number;
    channel: string;
    entries: readonly { name: string; json: string }[];
  }): Promise<{ verdict: 'ok'; changed: boolean } | { verdict: 'conflict'; name: string; live: string }> {
    const reply = (await this.#run(
      'publishCatalog',
      [call.keys.tools, call.keys.seen],
      [call.now, call.liveAfter, call.channel, ...call.entries.flatMap((entry) => [entry.name, entry.json])],
    )) as [string, number | string, string?];
    if (reply[0] === 'conflict') return { verdict: 'conflict', name: String(reply[1]), live: String(reply[2]) };
    return { verdict: 'ok', changed: reply[1] === 1 };
  }

  /** Admits a principal's run under its caps, or parks the job (admit-run-4.lua). */
  async admitRun(call: {
    keys: RunKeys;
    member: string;
    now: number;
    leaseMs: number;
    capAll: number;
    capTool: number;
    principal: string;
  }): Promise<{ admitted: boolean; runningAll: number; runningTool: number }> {
    const [admitted, runningAll, runningTool] = (await this.#run('admitRun', runKeyList(call.keys), [
      call.member,
      call.now,
      call.leaseMs,
      call.capAll,
      call.capTool,
      call.principal,
    ])) as [number, number, number];
    return { admitted: admitted === 1, runningAll, runningTool };
  }

  /** Ends a principal's run; answers its longest-parked job to start, if any (release-run-4.lua). */
  async releaseRun(call: { keys: RunKeys; member: string; principal: string }): Promise<string | undefined> {
    const next = await this.#run('releaseRun', runKeyList(call.keys), [call.member, call.principal]);
    return typeof next === 'string' ? next : undefined;
  }

  #run(command: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const script = SCRIPTS.get(command);
    const fits = script?.moreKeys ? keys.length >= script.numberOfKeys : script?.numberOfKeys === keys.length;
    if (!script || !fits) {
      throw new Error(`Script '${command}' takes ${script?.numberOfKeys ?? 'no'} keys, given ${keys.length}`);
    }
    const run = (this.#redis as unknown as Record<string, Command>)[command] as Command;
    if (script.moreKeys) return run.call(this.#redis, keys.length, ...keys, ...args);
    return run.call(this.#redis, ...keys, ...args);
  }
}

/** The keys of a principal's runs and parked jobs (admit-run-4.lua, release-run-4.lua). */
export interface RunKeys {
  runs: string;
  toolRuns: string;
  parked: string;
  parkedOwners: string;
}

function runKeyList(keys: RunKeys): string[] {
  return [keys.runs, keys.toolRuns, keys.parked, keys.parkedOwners];
}

/** A hash from the flat field/value list Redis answers (HGETALL in a script, a stream entry's fields). */
export function hashOf(flat: readonly unknown[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[String(flat[i])] = String(flat[i + 1]);
  return hash;
}
