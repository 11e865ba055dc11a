// MRTR `requestState` (C26-MRTR-5): it comes back from the client, so it is signed (HMAC-SHA256) and binds the
// caller, the call it resumes, the tool and a digest of its arguments, with an expiry. The signing keys are shared by
// every api replica through Redis, so a retry may reach any replica, and they rotate: a key signs during one period
// of REQUEST_STATE_KEY_ROTATION_MS and verifies for REQUEST_STATE_KEY_OVERLAP_MS more. A replica keeps the keys it
// read for REQUEST_STATE_KEY_RECHECK_MS, so a key lost from Redis (a restart without persistence, FLUSHALL) is
// replaced by the next replica that signs, and the others follow within that time, without a restart; states signed
// with the lost key are refused like any invalid state, and their clients start over (docs/security.md).
// Beside the services (context.ts), not in the 2026-07-28 wire that alone uses it: ApiServices carries the signer,
// and the use cases, which read ApiServices, must not depend on a wire.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SigningKeys } from '@mcp-tasks/engine';
import { canonicalJson, ErrorCode, ProtocolError } from '@mcp-tasks/protocol';

export interface RequestState {
  /** The plain call (its record id) the retry resumes. */
  call: string;
  owner: string;
  tool: string;
  /** SHA-256 of the canonical JSON of the call's arguments. */
  args: string;
  /** Epoch ms after which the state is refused. */
  exp: number;
}

/** How long a requestState stays valid at most (the waiting tool gives up after INPUT_REQUEST_TIMEOUT_MS anyway). */
export const REQUEST_STATE_TTL_MS = 10 * 60_000;

/** The longest token read: a state is about 300 characters; anything much longer is not ours. */
const MAX_TOKEN_LENGTH = 4096;

export interface SigningKeyTiming {
  /** How long one key signs (REQUEST_STATE_KEY_ROTATION_MS). */
  rotationMs: number;
  /** How long a key still verifies after it stopped signing (REQUEST_STATE_KEY_OVERLAP_MS). */
  overlapMs: number;
  /** How long a replica uses a key it read before reading it again (REQUEST_STATE_KEY_RECHECK_MS). */
  recheckMs: number;
  /** The clock (tests move it). */
  now?: () => number;
}

/** A signing period's key as a replica last read it; no `secret` when Redis had none then. */
interface KnownKey {
  generation?: string;
  secret?: Buffer;
  readAt: number;
}

export class RequestStateSigner {
  /** The keys read, by period: only periods whose states may still be verified (see #forget). */
  readonly #known = new Map<number, KnownKey>();
  /** Reads in flight, by period and whether they create a missing key: concurrent requests share one. */
  readonly #reading = new Map<string, Promise<KnownKey>>();
  readonly #now: () => number;

  constructor(
    /** Where the periods' keys are kept (the engine's, shared by every replica). */
    private readonly keys: SigningKeys,
    private readonly timing: SigningKeyTiming,
  ) {
    this.#now = timing.now ?? Date.now;
  }

  /**
   * The state signed with the current period's key, as `<period>.<generation>.<payload>.<mac>`; it expires after
   * REQUEST_STATE_TTL_MS, or sooner when its key stops verifying before that.
   */
  async sign(state: Omit<RequestState, 'exp'>): Promise<string> {
    const now = this.#now();
    const period = Math.floor(now / this.timing.rotationMs);
    const key = await this.#signingKey(period, now);
    const exp = Math.min(now + REQUEST_STATE_TTL_MS, this.#retiresAt(period));
    const signed = `${period}.${key.generation}.${Buffer.from(JSON.stringify({ ...state, exp })).toString('base64url')}`;
    return `${signed}.${mac(key.secret, signed)}`;
  }

  /**
   * The state if it is ours (signed by a key that still verifies), unexpired and for this caller, tool and arguments;
   * otherwise -32602, the same for every reason.
   */
  async verify(token: unknown, expected: Omit<RequestState, 'call' | 'exp'>): Promise<RequestState> {
    const invalid = () =>
      new ProtocolError(ErrorCode.InvalidParams, 'Invalid requestState: not issued for this request, or expired');
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) throw invalid();
    const parts = token.split('.');
    const [periodText, generation, payload, given] = parts;
    if (parts.length !== 4 || !/^\d{1,15}$/.test(periodText ?? '') || !generation || !payload || !given) {
      throw invalid();
    }
    const now = this.#now();
    const period = Number(periodText);
    if (!this.#verifies(period, now)) throw invalid();
    const key = await this.#verifyingKey(period, generation, now);
    if (!key?.secret) throw invalid();
    const want = Buffer.from(mac(key.secret, `${periodText}.${generation}.${payload}`));
    const got = Buffer.from(given);
    if (want.length !== got.length || !timingSafeEqual(want, got)) throw invalid();
    const state = parseState(payload);
    if (
      !state ||
      state.owner !== expected.owner ||
      state.tool !== expected.tool ||
      state.args !== expected.args ||
      !(state.exp > now)
    )
      throw invalid();
    return state;
  }

  /** When the key of `period` stops verifying: the end of its period plus the overlap. */
  #retiresAt(period: number): number {
    return (period + 1) * this.timing.rotationMs + this.timing.overlapMs;
  }

  /**
   * Whether a state of `period` may be verified now: its key has not retired, and the period is not ahead of ours by
   * more than one (another replica's clock may have entered the next period already). Anything else is refused
   * without a read, so a client cannot make a replica read keys of its choosing.
   */
  #verifies(period: number, now: number): boolean {
    return period <= Math.floor(now / this.timing.rotationMs) + 1 && now < this.#retiresAt(period);
  }

  /** The key that signs in `period`: the one known while fresh, else read from Redis, created when missing. */
  async #signingKey(period: number, now: number): Promise<{ generation: string; secret: Buffer }> {
    let key = this.#known.get(period);
    if (!key?.secret || !this.#fresh(key, now)) key = await this.#read(period, true);
    if (!key.secret || !key.generation) throw new Error('The requestState signing key could not be read from Redis');
    return { generation: key.generation, secret: key.secret };
  }

  /**
   * The key of `period` if it is of `generation`. A key read within REQUEST_STATE_KEY_RECHECK_MS answers without a
   * read; otherwise Redis is read (never written: only signing creates keys). Reads are thus bounded to one per
   * verifiable period per recheck time, whatever the clients send.
   */
  async #verifyingKey(period: number, generation: string, now: number): Promise<KnownKey | undefined> {
    let key = this.#known.get(period);
    if (!key || !this.#fresh(key, now)) key = await this.#read(period, false);
    return key.generation === generation ? key : undefined;
  }

  #fresh(key: KnownKey, now: number): boolean {
    return now - key.readAt < this.timing.recheckMs;
  }

  #read(period: number, create: boolean): Promise<KnownKey> {
    const id = `${period}${create ? '+' : ''}`;
    let reading = this.#reading.get(id);
    if (!reading) {
      reading = this.#readFromRedis(period, create).finally(() => this.#reading.delete(id));
      this.#reading.set(id, reading);
    }
    return reading;
  }

  async #readFromRedis(period: number, create: boolean): Promise<KnownKey> {
    let stored = await this.keys.read(period);
    if (stored === undefined && create) {
      // The first replica to sign in a period creates its key; a concurrent one keeps the first and reads it.
      const fresh = `${randomBytes(6).toString('hex')}:${randomBytes(32).toString('base64')}`;
      const lifetime = Math.max(1, this.#retiresAt(period) - this.#now());
      stored = await this.keys.create(period, fresh, lifetime);
    }
    const now = this.#now();
    const key = parseKey(stored, now);
    this.#forget(now);
    this.#known.set(period, key);
    return key;
  }

  /** Drops the keys of periods whose states can no longer be verified. */
  #forget(now: number): void {
    for (const period of this.#known.keys()) if (now >= this.#retiresAt(period)) this.#known.delete(period);
  }
}

function parseKey(stored: string | undefined, readAt: number): KnownKey {
  const colon = stored?.indexOf(':') ?? -1;
  if (!stored || colon <= 0) return { readAt };
  return { generation: stored.slice(0, colon), secret: Buffer.from(stored.slice(colon + 1), 'base64'), readAt };
}

function parseState(payload: string): RequestState | undefined {
  try {
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    return typeof state === 'object' && state !== null ? (state as RequestState) : undefined;
  } catch {
    return undefined;
  }
}

function mac(secret: Buffer, signed: string): string {
  return createHmac('sha256', secret).update(signed).digest('base64url');
}

export function argumentsDigest(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('base64url');
}
