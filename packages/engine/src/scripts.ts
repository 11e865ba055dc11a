// Our Redis scripts, registered one way (BullMQ's scripts.ts is the model): every file in lua/ is named
// `<command>-<numberOfKeys>.lua` and opens with a header listing its KEYS, its arguments and its return values. This
// module loads them all, defines them on a connection once (EVALSHA, falling back to EVAL), and is the only code that
// puts their keys and arguments in order: callers pass named keys and values.
//
// A script takes its arguments as one table, JSON in ARGV[1] (`local args = cjson.decode(ARGV[1])`), variable-length
// data included. Its fixed keys are KEYS[1 .. numberOfKeys]. A script whose header declares
// `KEYS[<numberOfKeys + 1>...]` also takes optional keys after those: each is named in the table by its KEYS index (a
// field `key`, or a table `keys` of them), computed here (ScriptKeys), so that no script computes a key's position
// and none touches a key it was not given. A line `--- @include "<name>"` is replaced by `lua/include/<name>.lua`
// (BullMQ's scripts include theirs the same way; an include may include others, each lands once): Lua code shared by
// several scripts. A script that decides answers a verdict, a name of Reply (script-replies.ts, the same table as
// lua/include/replies.lua), first in its reply; the methods here read it by that name.
import { readdirSync, readFileSync } from 'node:fs';
import type { TaskStatus, WaitKind } from '@mcp-tasks/protocol';
import type { RedisClient } from './redis.ts';
import { type OpeningCall, type Opened, openedOf, openingArgs } from './request-opening.ts';
import { Reply } from './script-replies.ts';
import type {
  CreateTaskCall,
  CreateTaskReply,
  ParentRefusal,
  ResumeRefusal,
  TransitionCall,
  TransitionReply,
  SettleWebhookCall,
  SaveDurableCall,
  SaveDurableReply,
  AnswerInputVerdict,
  CreateSessionReply,
  TouchSessionCall,
  CreateSessionCall,
  DurableRefusalReply,
  ParkWaitCall,
  ParkWaitReply,
  SignalTaskCall,
  SignalTaskReply,
  TakeInputCall,
  TakeInputReply,
  NoteTriesCall,
} from './script-calls.ts';

// The calls and replies are the registry's contract: whoever imports the scripts imports their types from here too.
export type * from './script-calls.ts';

const LUA_DIR = new URL('./lua/', import.meta.url);
const INCLUDE_DIR = new URL('./include/', LUA_DIR);
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;
const FILE_NAME = /^([a-z]+(?:-[a-z]+)*)-(\d+)\.lua$/;
const MORE_KEYS = /KEYS\[(\d+)\.\.\.\]/;

interface ScriptFile {
  /** The keys it always takes. */
  numberOfKeys: number;
  /** It takes optional keys after those (its header declares `KEYS[numberOfKeys + 1...]`). */
  moreKeys: boolean;
  lua: string;
}

/** `text` with its includes expanded, each include once (a second `@include` of one already in is dropped). */
function withIncludes(text: string, included: Set<string>): string {
  return text.replace(INCLUDE, (_, name: string) => {
    if (included.has(name)) return '';
    included.add(name);
    return withIncludes(readFileSync(new URL(`${name}.lua`, INCLUDE_DIR), 'utf8'), included);
  });
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
      const text = readFileSync(new URL(file, LUA_DIR), 'utf8');
      const more = MORE_KEYS.exec(text.slice(0, text.indexOf(']]')));
      if (more && Number(more[1]) !== numberOfKeys + 1) {
        throw new Error(`Lua script '${file}': more keys start at KEYS[${numberOfKeys + 1}], not KEYS[${more[1]}]`);
      }
      return [command, { numberOfKeys, moreKeys: more !== null, lua: withIncludes(text, new Set()) }];
    }),
);

/** The catalog's keys, in the order publish-catalog-4.lua and withdraw-catalog-4.lua take them. */
interface CatalogKeys {
  tools: string;
  seen: string;
  publishers: string;
  servers: string;
}

function catalogKeys({ tools, seen, publishers, servers }: CatalogKeys): ScriptKeys {
  return new ScriptKeys([tools, seen, publishers, servers]);
}

/**
 * The KEYS of one call: the script's fixed keys, then the optional ones, each added answering its KEYS index for the
 * script's argument table.
 */
class ScriptKeys {
  readonly list: string[];

  constructor(fixed: readonly string[]) {
    this.list = [...fixed];
  }

  /** Adds a key; its KEYS index (from 1). */
  readonly add = (key: string): number => this.list.push(key);

  /** Adds each key of `keys`; their KEYS indexes by the same names. */
  named<K extends string>(keys: Record<K, string>): Record<K, number> {
    const indexes = {} as Record<K, number>;
    for (const name of Object.keys(keys) as K[]) indexes[name] = this.add(keys[name]);
    return indexes;
  }
}

/**
 * A lone surrogate's escape as JSON.stringify writes it (`\ud800`, lowercase); a backslash written as text before
 * such letters matches too, which costs only the slower path.
 */
const SURROGATE_ESCAPE = /\\ud[89a-f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The argument table as cjson.decode reads it. cjson refuses the escape of a lone surrogate, which JSON.stringify
 * writes for a string that has one: such strings are sent made well-formed (U+FFFD in its place), which is what
 * sending them as plain arguments used to store (UTF-8 encoding does the same).
 */
function encodeArgs(args: object): string {
  const json = JSON.stringify(args);
  if (!SURROGATE_ESCAPE.test(json)) return json;
  return JSON.stringify(args, (_, value: unknown) =>
    typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value,
  );
}

type Command = (...keysThenArgs: (string | number)[]) => Promise<unknown>;

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
   * job's priority (0 without), and with `job` the job itself (a prioritized one with that priority, a standard one
   * on its queue's wait list), and with `context` the request context, and with `filed` a plain call's entry by
   * request id. With `open`, the request is opened first: `opened` is not 0 when that refused it (then nothing was
   * written).
   */
  async createTask(call: CreateTaskCall): Promise<CreateTaskReply> {
    const { fair, open, job, context, idempotency, parent, resume, filed } = call;
    if (job?.kind === 'prioritized' && !fair) throw new Error('createTask: a prioritized job needs its fair priority');
    const keys = new ScriptKeys([
      call.keys.record,
      call.keys.live,
      call.keys.allTasks,
      call.keys.expiries,
      call.keys.ownerIndex,
      call.keys.ownerLive,
    ]);
    const [verdict, first, second] = (await this.#run('createTask', keys, {
      taskId: call.taskId,
      expiresAt: call.expiresAt,
      now: call.now,
      maxLive: call.maxLive,
      member: call.member,
      listed: call.listed,
      expiryEntry: call.expiryEntry,
      fields: Object.entries(call.fields).flat(),
      fair: fair && {
        keys: keys.named(fair.keys),
        principal: fair.principal,
        step: fair.step,
        maxPriority: fair.maxPriority,
      },
      job: job && {
        kind: job.kind,
        keys: keys.named<string>(job.keys),
        name: job.name,
        data: job.data,
        opts: job.opts,
        timestamp: job.timestamp,
      },
      open: open && openingArgs(open, keys.add),
      context: context && { key: keys.add(context.keys.hash), fields: Object.entries(context.fields).flat() },
      idempotency: idempotency && {
        keys: keys.named(idempotency.keys),
        key: idempotency.key,
        digest: idempotency.digest,
        maxKeys: idempotency.maxKeys,
        replace: idempotency.replace,
      },
      parent: parent && {
        keys: keys.named(parent.keys),
        field: parent.field,
        attempt: parent.attempt,
        maxEntries: parent.maxEntries,
        digest: parent.digest,
        facts: parent.facts,
        maxChildren: parent.maxChildren,
      },
      resume: resume && { keys: keys.named(resume.keys), taskId: resume.taskId, drop: resume.drop },
      filed: filed && { key: keys.add(filed.keys.calls), field: filed.field },
    })) as [Reply, number | string, (number | string)?];
    switch (verdict) {
      case Reply.NOT_OPENED: {
        const opened = openedOf(first);
        if (opened === 0) throw new Error('create-task-6.lua refused an opening with 0');
        return { opened };
      }
      case Reply.OWNER_LIMIT:
        return { opened: 0, verdict: 'owner-limit', count: Number(first) };
      case Reply.SAME_CALL:
      case Reply.OTHER_CALL:
        return { opened: 0, verdict: 'existing', taskId: String(first), sameCall: verdict === Reply.SAME_CALL };
      case Reply.PARENT_REFUSED:
        return {
          opened: 0,
          verdict: 'parent-refused',
          reason: first as ParentRefusal,
          detail: second === undefined ? undefined : String(second),
        };
      case Reply.RESUME_REFUSED:
        return {
          opened: 0,
          verdict: 'resume-refused',
          reason: first as ResumeRefusal,
          detail: second === undefined ? undefined : String(second),
        };
      case Reply.CREATED:
        return { opened: 0, verdict: 'created', count: Number(first), priority: Number(second ?? 0) };
      default:
        throw new Error(`create-task-6.lua answered ${String(verdict)}`);
    }
  }

  /**
   * save-durable-3.lua: a running tool's checkpoint or step result, fenced by its attempt; a step stored already
   * answers its first result.
   */
  async saveDurable(call: SaveDurableCall): Promise<SaveDurableReply> {
    const { keys, ...args } = call;
    const [verdict, detail] = (await this.#run(
      'saveDurable',
      new ScriptKeys([keys.record, keys.durable, keys.live]),
      args,
    )) as [SaveDurableReply['verdict'], string?];
    switch (verdict) {
      case Reply.OK:
      case Reply.MISSING:
        return { verdict };
      case Reply.EXISTS:
        return { verdict, value: String(detail) };
      case Reply.ENDED:
        return { verdict, status: detail as TaskStatus };
      case Reply.STALE:
        return { verdict, attempt: Number(detail) };
      case Reply.OVER:
        return { verdict, bytes: Number(detail) };
      default:
        return { verdict, count: Number(detail) };
    }
  }

  /** transition-8.lua: one atomic move along the state machine, with its status event (and webhook delivery). */
  async transition(call: TransitionCall): Promise<TransitionReply> {
    const { begin, unchangedSince } = call;
    const withdraw = begin?.withdraw ?? [];
    if (withdraw.length !== call.keys.withdrawn.length) {
      throw new Error('transition: one key per request to withdraw');
    }
    const keys = new ScriptKeys([
      call.keys.record,
      call.keys.live,
      call.keys.events,
      call.keys.ownerLive,
      call.keys.inputs,
      call.keys.sessionInputs,
      call.keys.webhookOutbox,
      call.keys.webhooksDue,
    ]);
    const [verdict, a, b, ...rest] = (await this.#run('transition', keys, {
      taskId: call.taskId,
      to: call.to,
      from: call.from,
      now: call.now,
      statusMessage: call.statusMessage === '' ? undefined : call.statusMessage,
      outcome: call.outcome,
      terminal: call.terminal,
      waiterChannels: call.waiterChannels,
      sessionChannel: call.sessionChannel,
      stream: call.stream,
      input: call.input,
      attempt: call.attempt,
      begin: begin && {
        withdraw: withdraw.map(({ requestId, notice }, i) => ({
          key: keys.add(call.keys.withdrawn[i] as string),
          requestId,
          notice,
        })),
      },
      unchangedSince,
      run: call.run,
      webhooks: call.webhooks,
    })) as [Reply, string?, string?, ...string[]];
    switch (verdict) {
      case Reply.OK:
        // The move that starts an attempt also says whether the task keeps durable state (transition-8.lua).
        if (begin) return { verdict, status: a as TaskStatus, lastUpdatedAt: Number(b), durable: rest[0] === '1' };
        return { verdict, status: a as TaskStatus, lastUpdatedAt: Number(b) };
      case Reply.UNCHANGED:
        return { verdict, status: a as TaskStatus, lastUpdatedAt: Number(b) };
      case Reply.MISSING:
        return { verdict };
      case Reply.STALE:
        return { verdict, current: a as TaskStatus, attempt: Number(b) };
      case Reply.CHANGED:
        return { verdict, current: a as TaskStatus };
      case Reply.WITHDRAW:
        return { verdict, requestIds: [a, b, ...rest].filter((id) => id !== undefined) };
      default:
        return { verdict: Reply.REJECTED, current: a as TaskStatus };
    }
  }

  /** claim-due-1.lua: up to `limit` members of the set due at `now`, held by this caller until `leaseEnd`. */
  async claimDue(call: { keys: { set: string }; now: number; limit: number; leaseEnd: number }): Promise<string[]> {
    const { now, limit, leaseEnd } = call;
    return (await this.#run('claimDue', new ScriptKeys([call.keys.set]), {
      now,
      limit,
      leaseEnd,
    })) as string[];
  }

  /** settle-webhook-4.lua: one attempt of a task's webhook delivery, while the caller's claim holds. */
  async settleWebhook(call: SettleWebhookCall): Promise<'ok' | 'lost'> {
    const { keys, ...args } = call;
    const [verdict] = (await this.#run(
      'settleWebhook',
      new ScriptKeys([keys.due, keys.outbox, keys.log, keys.counters]),
      args,
    )) as [Reply];
    return verdict === Reply.OK ? Reply.OK : Reply.LOST;
  }

  /**
   * get-owned-1.lua: the record's fields when `owner` owns it; an unfinished task records `watcher` (a replica's
   * id) as one of its waiters in the same step. With `open`, the request is opened first: `opened` is not 0 when
   * that refused it (then nothing was read). With `since`, an unfinished task of that session answers where the
   * session's event stream stands (`since`), read in the same step.
   */
  async getOwned(call: {
    keys: { record: string };
    owner: string;
    watcher?: string;
    open?: OpeningCall;
    since?: { keys: { events: string }; session: string };
  }): Promise<{ opened: Opened; fields: Record<string, string> | undefined; since?: string }> {
    const { open, since } = call;
    const keys = new ScriptKeys([call.keys.record]);
    const [opened, position, ...flat] = (await this.#run('getOwned', keys, {
      owner: call.owner,
      watcher: call.watcher,
      open: open && openingArgs(open, keys.add),
      since: since && { key: keys.add(since.keys.events), session: since.session },
    })) as [number, string?, ...string[]];
    return {
      opened: openedOf(opened),
      fields: flat.length === 0 ? undefined : hashOf(flat),
      ...(position ? { since: position } : {}),
    };
  }

  /** mark-external-1.lua: records where a live task's work runs. */
  async markExternal(call: {
    keys: { record: string };
    ref: string;
  }): Promise<{ verdict: 'ok' | 'missing' | 'terminal'; status?: string }> {
    const [verdict, status] = (await this.#run('markExternal', new ScriptKeys([call.keys.record]), {
      ref: call.ref,
    })) as ['ok' | 'missing' | 'terminal', string?];
    return status === undefined ? { verdict } : { verdict, status };
  }

  /** hand-out-2.lua: makes a live plain call of `owner` a task (a task handle); answers what became of it. */
  async handOut(call: {
    keys: { record: string; ownerIndex: string };
    owner: string;
    member: string;
    expiresAt: number;
  }): Promise<{ verdict: 'handed' | 'ended' | 'missing'; status?: string }> {
    const [verdict, status] = (await this.#run('handOut', new ScriptKeys([call.keys.record, call.keys.ownerIndex]), {
      owner: call.owner,
      member: call.member,
      expiresAt: call.expiresAt,
    })) as ['handed' | 'ended' | 'missing', string?];
    return status === undefined ? { verdict } : { verdict, status };
  }

  /**
   * take-ended-13.lua: a plain call's record of `owner` read, and deleted in the same step with its session entry once
   * it has ended (`deleted`); `fields` are the record's (none when it is missing or someone else's).
   */
  async takeEnded(call: {
    keys: {
      record: string;
      inputs: string;
      durable: string;
      children: string;
      signals: string;
      webhookOutbox: string;
      webhookLog: string;
      live: string;
      allTasks: string;
      ownerIndex: string;
      ownerLive: string;
      expiries: string;
      calls: string;
      waiting: Record<WaitKind, string>;
    };
    owner: string;
    taskId: string;
    member: string;
    entries: readonly string[];
    field?: string;
  }): Promise<{ deleted: boolean; fields: Record<string, string> | undefined }> {
    const { keys } = call;
    const scriptKeys = new ScriptKeys([
      keys.record,
      keys.inputs,
      keys.durable,
      keys.children,
      keys.signals,
      keys.webhookOutbox,
      keys.webhookLog,
      keys.live,
      keys.allTasks,
      keys.ownerIndex,
      keys.ownerLive,
      keys.expiries,
      keys.calls,
    ]);
    const [deleted, ...fields] = (await this.#run('takeEnded', scriptKeys, {
      owner: call.owner,
      taskId: call.taskId,
      member: call.member,
      entries: call.entries,
      ...(call.field !== undefined ? { field: call.field } : {}),
      waiting: scriptKeys.named(keys.waiting),
    })) as [number, ...string[]];
    return { deleted: deleted === 1, fields: fields.length === 0 ? undefined : hashOf(fields) };
  }

  /** note-attempt-1.lua: notes an attempt's start or end, or takes every attempt left; answers those taken. */
  async noteAttempt(call: {
    keys: { record: string };
    attempt?: number;
    start?: { at: number; worker: string };
  }): Promise<{ attempt: number; at: number; worker: string }[]> {
    const flat = (await this.#run('noteAttempt', new ScriptKeys([call.keys.record]), {
      ...(call.attempt !== undefined ? { attempt: call.attempt } : {}),
      ...(call.start ? { start: call.start } : {}),
    })) as (number | string)[];
    const taken = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      taken.push({ attempt: Number(flat[i]), at: Number(flat[i + 1]), worker: String(flat[i + 2]) });
    }
    return taken;
  }

  /**
   * release-lost-3.lua: files the jobs of `jobs` (whose holder had no connection at this look) as suspects, and
   * releases those filed at or before `confirmAfter` whose lock still holds the same token; answers the ids released.
   */
  async releaseLost(call: {
    keys: { suspects: string; stalled: string; stalledCheck: string };
    now: number;
    confirmAfter: number;
    keepMs: number;
    jobs: readonly { id: string; token: string; lockKey: string }[];
  }): Promise<string[]> {
    const keys = new ScriptKeys([call.keys.suspects, call.keys.stalled, call.keys.stalledCheck]);
    return (await this.#run('releaseLost', keys, {
      now: call.now,
      confirmAfter: call.confirmAfter,
      keepMs: call.keepMs,
      jobs: call.jobs.map(({ id, token, lockKey }) => ({ id, token, key: keys.add(lockKey) })),
    })) as string[];
  }

  /** answer-input-1.lua: accepted, unknown (no such request for this session or owner), or answered already. */
  async answerInput(call: {
    keys: { request: string };
    sessionId: string;
    owner: string;
    answer: string;
    channel: string;
  }): Promise<{ verdict: AnswerInputVerdict; parked?: { taskId: string; queue: string } }> {
    const { sessionId, owner, answer, channel } = call;
    const [verdict, taskId, queue] = (await this.#run('answerInput', new ScriptKeys([call.keys.request]), {
      sessionId,
      owner,
      answer,
      channel,
    })) as [AnswerInputVerdict, string?, string?];
    if (taskId === undefined || queue === undefined) return { verdict };
    return { verdict, parked: { taskId, queue } };
  }

  /** claim-delivery-1.lua: whether streams of kind `via` deliver the input request. */
  async claimDelivery(call: { keys: { request: string }; via: 'get' | 'result' }): Promise<boolean> {
    return (await this.#run('claimDelivery', new ScriptKeys([call.keys.request]), { via: call.via })) === 1;
  }

  /**
   * touch-session-6.lua: the session's fields with its idle timer restarted and the request counted, and the number
   * (1..4) of the bucket that refused it (0: none); undefined when there is no such session.
   */
  async touchSession(
    call: TouchSessionCall,
  ): Promise<{ refused: Exclude<Opened, -1>; fields: Record<string, string> } | undefined> {
    const keys = new ScriptKeys([]);
    const open = openingArgs(call, keys.add);
    const reply = (await this.#run('touchSession', keys, { open, known: call.known === true })) as (number | string)[];
    if (reply.length === 0) return undefined;
    const [refused, ...flat] = reply;
    const opened = openedOf(refused);
    if (opened === -1) throw new Error('touch-session-6.lua answered -1 for a session it found');
    return { refused: opened, fields: hashOf(flat) };
  }

  /**
   * create-session-6.lua: stores the session after its initialize rate limits and the caps on live sessions admit
   * it; refused by the principal's (bucket 1) or the address's (bucket 2) rate limit, or the owner's or the
   * address's cap (`count`: the live sessions it holds).
   */
  async createSession(call: CreateSessionCall): Promise<CreateSessionReply> {
    const { keys, buckets } = call;
    const [principalBucket, addressBucket] = buckets;
    if (buckets.length !== 2 || !principalBucket || !addressBucket) {
      throw new Error('createSession: exactly two rate buckets');
    }
    const [verdict, detail] = (await this.#run(
      'createSession',
      new ScriptKeys([
        keys.session,
        keys.ownerSessions,
        keys.addressSessions,
        principalBucket.key,
        addressBucket.key,
        keys.counters,
      ]),
      {
        sessionId: call.sessionId,
        now: call.now,
        idleMs: call.idleMs,
        countedUntil: call.countedUntil,
        windowMs: call.windowMs,
        principalLimit: principalBucket.limit,
        addressLimit: addressBucket.limit,
        maxPerOwner: call.maxPerOwner,
        maxPerAddress: call.maxPerAddress,
        refusalCounters: call.refusalCounters,
        fields: Object.entries(call.fields).flat(),
      },
    )) as [CreateSessionReply['verdict'], number?];
    switch (verdict) {
      case Reply.CREATED:
        return { verdict };
      case Reply.RATE_LIMITED:
        return { verdict, bucket: Number(detail) };
      default:
        return { verdict, count: Number(detail) };
    }
  }

  /** refresh-session-3.lua: keeps a session in use counted under its caps; false when the session is gone. */
  async refreshSession(call: {
    keys: { session: string; ownerSessions: string; addressSessions: string };
    sessionId: string;
    countedUntil: number;
  }): Promise<boolean> {
    const { keys, sessionId, countedUntil } = call;
    const refreshed = await this.#run(
      'refreshSession',
      new ScriptKeys([keys.session, keys.ownerSessions, keys.addressSessions]),
      { sessionId, countedUntil },
    );
    return refreshed === 1;
  }

  /** record-failed-lookup-3.lua: counts a failed lookup; the principal bucket's count. */
  async recordFailedLookup(call: {
    keys: { principalBucket: string; addressBucket: string; counters: string };
    windowMs: number;
    counter: string;
  }): Promise<{ principal: number; address: number }> {
    const { keys, windowMs, counter } = call;
    const [principal, address] = (await this.#run(
      'recordFailedLookup',
      new ScriptKeys([keys.principalBucket, keys.addressBucket, keys.counters]),
      { windowMs, counter },
    )) as [number, number];
    return { principal, address };
  }

  /** acquire-connection-slot-1.lua: a lease on one of the session's stream slots, if one is free. */
  async acquireConnectionSlot(call: {
    keys: { streams: string };
    streamId: string;
    now: number;
    leaseMs: number;
    limit: number;
  }): Promise<{ opened: boolean; count: number }> {
    const { streamId, now, leaseMs, limit } = call;
    const [verdict, count] = (await this.#run('acquireConnectionSlot', new ScriptKeys([call.keys.streams]), {
      streamId,
      now,
      leaseMs,
      limit,
    })) as [Reply, number];
    return { opened: verdict === Reply.OK, count };
  }

  /** compare-and-set-1.lua: sets (or, without `value`, deletes) the key if it holds `expected` (absent: no key). */
  async compareAndSet(call: {
    keys: { key: string };
    expected?: string;
    value?: string;
    ttlMs?: number;
  }): Promise<{ done: true } | { done: false; current: string | undefined }> {
    const { expected, value, ttlMs } = call;
    const [verdict, current] = (await this.#run('compareAndSet', new ScriptKeys([call.keys.key]), {
      ...(expected !== undefined ? { expected } : {}),
      ...(value !== undefined ? { value, ttlMs: ttlMs ?? 0 } : {}),
    })) as [Reply, string | null | undefined];
    if (verdict === Reply.OK) return { done: true };
    return { done: false, current: typeof current === 'string' ? current : undefined };
  }

  /** publish-catalog-4.lua: a worker's catalog entries, unless one conflicts with a live definition. */
  async publishCatalog(call: {
    keys: CatalogKeys;
    now: number;
    liveAfter: number;
    channel: string;
    publisher: string;
    instance: string;
    entries: readonly { name: string; json: string; publisher?: string }[];
  }): Promise<{ verdict: 'ok'; changed: boolean } | { verdict: 'conflict'; name: string; live: string }> {
    const { now, liveAfter, channel, publisher, instance, entries } = call;
    const reply = (await this.#run('publishCatalog', catalogKeys(call.keys), {
      now,
      liveAfter,
      channel,
      publisher,
      instance,
      entries,
    })) as [Reply, number | string, string?];
    if (reply[0] === Reply.CONFLICT) return { verdict: Reply.CONFLICT, name: String(reply[1]), live: String(reply[2]) };
    return { verdict: Reply.OK, changed: reply[1] === 1 };
  }

  /** withdraw-catalog-4.lua: a stopping worker's entries that no other live worker serves; how many went. */
  async withdrawCatalog(call: {
    keys: CatalogKeys;
    liveAfter: number;
    channel: string;
    instance: string;
    names: readonly string[];
  }): Promise<number> {
    const { liveAfter, channel, instance, names } = call;
    return Number(await this.#run('withdrawCatalog', catalogKeys(call.keys), { liveAfter, channel, instance, names }));
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
    const { member, now, leaseMs, capAll, capTool, principal } = call;
    const [verdict, runningAll, runningTool] = (await this.#run('admitRun', runKeys(call.keys), {
      member,
      now,
      leaseMs,
      capAll,
      capTool,
      principal,
    })) as [Reply, number, number];
    return { admitted: verdict === Reply.OK, runningAll, runningTool };
  }

  /** Ends a principal's run; answers its longest-parked job to start, if any (release-run-4.lua). */
  async releaseRun(call: { keys: RunKeys; member: string; principal: string }): Promise<string | undefined> {
    const { member, principal } = call;
    const next = await this.#run('releaseRun', runKeys(call.keys), { member, principal });
    return typeof next === 'string' ? next : undefined;
  }

  /** park-wait-4.lua: parks a tool on a wait, or answers the wait's outcome (docs/durable-execution.md, "Waits"). */
  async parkWait(call: ParkWaitCall): Promise<ParkWaitReply> {
    const { keys, ...args } = call;
    const reply = (await this.#run(
      'parkWait',
      new ScriptKeys([keys.record, keys.durable, keys.signals, keys.waiting]),
      args,
    )) as [Reply, string?];
    return waitReply(reply) as ParkWaitReply;
  }

  /** signal-task-4.lua: an event for a task, given to its wait or kept for the next one. */
  async signalTask(call: SignalTaskCall): Promise<SignalTaskReply> {
    const { keys, ...args } = call;
    const [verdict, detail] = (await this.#run(
      'signalTask',
      new ScriptKeys([keys.record, keys.durable, keys.signals, keys.waiting]),
      args,
    )) as [Reply, string?];
    switch (verdict) {
      case Reply.DELIVERED:
        return { verdict, tool: String(detail) };
      case Reply.KEPT:
      case Reply.FULL:
        return { verdict, count: Number(detail) };
      case Reply.ENDED:
        return { verdict, status: detail as TaskStatus };
      default:
        return { verdict: Reply.MISSING };
    }
  }

  /** take-input-4.lua: the client's answer to a parked input request, or its timeout. */
  async takeInput(call: TakeInputCall): Promise<TakeInputReply> {
    const { keys, ...args } = call;
    const reply = (await this.#run(
      'takeInput',
      new ScriptKeys([keys.record, keys.durable, keys.request, keys.sessionInputs]),
      args,
    )) as [Reply, string?];
    return waitReply(reply) as TakeInputReply;
  }

  /** note-tries-2.lua: the failed tries of a step with a retry policy of its own. */
  async noteTries(call: NoteTriesCall): Promise<DurableRefusalReply | { verdict: 'ok' }> {
    const { keys, ...args } = call;
    const reply = (await this.#run('noteTries', new ScriptKeys([keys.record, keys.durable]), args)) as [Reply, string?];
    return waitReply(reply) as DurableRefusalReply | { verdict: 'ok' };
  }

  #run(command: string, keys: ScriptKeys, args: object): Promise<unknown> {
    const script = SCRIPTS.get(command);
    const count = keys.list.length;
    const fits = script?.moreKeys ? count >= script.numberOfKeys : script?.numberOfKeys === count;
    if (!script || !fits) {
      throw new Error(`Script '${command}' takes ${script?.numberOfKeys ?? 'no'} keys, given ${count}`);
    }
    const run = (this.#redis as unknown as Record<string, Command>)[command] as Command;
    const json = encodeArgs(args);
    if (script.moreKeys) return run.call(this.#redis, count, ...keys.list, json);
    return run.call(this.#redis, ...keys.list, json);
  }
}

/** The keys of a principal's runs and parked jobs (admit-run-4.lua, release-run-4.lua). */
export interface RunKeys {
  runs: string;
  toolRuns: string;
  parked: string;
  parkedOwners: string;
}

function runKeys(keys: RunKeys): ScriptKeys {
  return new ScriptKeys([keys.runs, keys.toolRuns, keys.parked, keys.parkedOwners]);
}

/** A hash from the flat field/value list Redis answers (HGETALL in a script, a stream entry's fields). */
export function hashOf(flat: readonly unknown[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[String(flat[i])] = String(flat[i + 1]);
  return hash;
}

/** The reply of a wait script (park-wait-4.lua, take-input-4.lua, note-tries-2.lua) as a value. */
function waitReply([verdict, detail]: [Reply, string?]): Record<string, unknown> & { verdict: Reply } {
  switch (verdict) {
    case Reply.RESOLVED:
    case Reply.WITHDRAWN:
      return { verdict, value: String(detail) };
    case Reply.PARKED:
      return { verdict, until: Number(detail) };
    case Reply.ENDED:
      return { verdict, status: detail };
    case Reply.STALE:
      return { verdict, attempt: Number(detail) };
    case Reply.FULL:
    case Reply.TOO_MANY:
      return { verdict, count: Number(detail) };
    default:
      return { verdict };
  }
}
