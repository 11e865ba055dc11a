// The opening of a request of a known session: its existence check, its idle timer restarted and its rate-limit
// count, done by touch-session-6.lua or, so that a task-augmented tools/call or a tasks/result costs one round trip,
// by the method's own script in its step (create-task-6.lua, get-owned-1.lua; lua/include/open-request.lua). This
// module is its one home: what an opening needs (OpeningCall), the part of a script's arguments it makes
// (openingArgs), how it went (Opened), the deferred opening a request carries (RequestOpening) and its refusal.
import { LocalError, LocalErrorCode } from '@mcp-tasks/protocol';

/** One rate-limit bucket of a request: `hit` counts the request, `check` only refuses when the bucket is full. */
export interface RateBucket {
  key: string;
  /** 0: the bucket is not used. */
  limit: number;
  mode: 'hit' | 'check';
}

/** What opening a request of a session needs (touch-session-6.lua, include/open-request.lua). */
export interface OpeningCall {
  keys: { session: string; counters: string };
  /** Exactly four, in the order of RateScope. */
  buckets: readonly RateBucket[];
  idleMs: number;
  windowMs: number;
  /** The security counters a refusal by a `hit` and by a `check` bucket increments. */
  refusalCounters: { hit: string; check: string };
}

/**
 * How opening a request went: 0 it may proceed, -1 its session is gone, 1..4 the bucket (in the order of RateScope)
 * that refused it.
 */
export type Opened = 0 | -1 | 1 | 2 | 3 | 4;

/** An opening as lua/include/open-request.lua takes it: each key is named by its KEYS index. */
export interface OpeningArgs {
  session: number;
  idleMs: number;
  windowMs: number;
  buckets: { key: number; limit: number; mode: 'hit' | 'check' }[];
  counters: number;
  refusalCounters: { hit: string; check: string };
}

/**
 * The opening's part of a script's arguments. `addKey` adds a key to the call's KEYS and answers its index (scripts.ts
 * ScriptKeys), so the opening's keys can sit wherever the script's own keys leave room.
 */
export function openingArgs(call: OpeningCall, addKey: (key: string) => number): OpeningArgs {
  if (call.buckets.length !== 4) throw new Error('An opening takes exactly four rate buckets');
  return {
    session: addKey(call.keys.session),
    idleMs: call.idleMs,
    windowMs: call.windowMs,
    buckets: call.buckets.map((bucket) => ({ key: addKey(bucket.key), limit: bucket.limit, mode: bucket.mode })),
    counters: addKey(call.keys.counters),
    refusalCounters: call.refusalCounters,
  };
}

/** A script's answer as an Opened; anything else is a defect of the script, not a refusal. */
export function openedOf(reply: unknown): Opened {
  const opened = Number(reply);
  if (opened === 0 || opened === -1 || opened === 1 || opened === 2 || opened === 3 || opened === 4) return opened;
  throw new Error(`Not an opening outcome: ${String(reply)}`);
}

/**
 * The opening of a request of a session this process knows (SessionStore.deferOpening), left to the method's own
 * script so that the request costs one round trip (create-task-6.lua, get-owned-1.lua open it in their step). A
 * request whose method has no such script, or that fails before it, is opened on its own by `settle` (one more
 * round trip, as before). Either way the caller learns the outcome from `settle`, before answering. `Known` is what
 * the opener knows of the request's session (SessionStore gives its fields).
 */
export class RequestOpening<Known = unknown> {
  #outcome: Promise<Opened> | undefined;

  constructor(
    readonly call: OpeningCall,
    readonly session: Known,
    private readonly open: () => Promise<Opened>,
    private readonly opened: (outcome: Opened) => Promise<void>,
  ) {}

  /**
   * The opening for a script to run in its step, or undefined when it is taken already. The script's outcome goes
   * to `done`; without it (the script failed), `settle` opens the request on its own.
   */
  take(): { call: OpeningCall; done: (outcome: Opened | undefined) => void } | undefined {
    if (this.#outcome) return undefined;
    let done!: (outcome: Opened | undefined) => void;
    this.#outcome = new Promise<Opened | undefined>((resolve) => (done = resolve)).then((outcome) =>
      outcome === undefined ? this.open() : this.opened(outcome).then(() => outcome),
    );
    return { call: this.call, done };
  }

  /** How the request's opening went: 0 admitted, -1 its session is gone, 1..4 the rate bucket that refused it. */
  settle(): Promise<Opened> {
    this.#outcome ??= this.open();
    return this.#outcome;
  }
}

/**
 * Runs a method's `step` with the request's opening, when there is one not taken yet, and hands the outcome on: a
 * refusal throws RequestRefusedError (the step then wrote and read nothing). A step that fails leaves the opening to
 * `settle`, unless `openedDespite(error)` says the script opened the request before refusing for its own reasons.
 */
export async function withOpening<T extends { opened: Opened }>(
  opening: RequestOpening | undefined,
  step: (call: OpeningCall | undefined) => Promise<T>,
  openedDespite: (error: unknown) => boolean = () => false,
): Promise<T> {
  const taken = opening?.take();
  let reply: T;
  try {
    reply = await step(taken?.call);
  } catch (error) {
    taken?.done(openedDespite(error) ? 0 : undefined);
    throw error;
  }
  taken?.done(reply.opened);
  if (reply.opened !== 0) throw new RequestRefusedError(reply.opened);
  return reply;
}

/** The request was refused as it was opened in a method's script (RequestOpening): `settle` says why. */
export class RequestRefusedError extends LocalError {
  constructor(readonly opened: Opened) {
    super(LocalErrorCode.RequestRefused, 'The request was refused as it was opened', { opened });
  }
}
