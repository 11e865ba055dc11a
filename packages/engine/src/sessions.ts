// MCP sessions live in Redis so that any api replica serves any request of any session. What clients can make
// Redis hold through them is bounded: a session stores a fixed-size projection of its initialize (the api's
// initialize handler makes it), and the live sessions of a principal and of a client address are capped.
import type { KeySpace } from './keys.ts';
import { SecurityEvent, type RateCharge } from './rate-limiter.ts';
import type { RedisClient } from './redis.ts';
import { type Opened, type OpeningCall, RequestOpening } from './request-opening.ts';
import { Reply } from './script-replies.ts';
import { RedisScripts } from './scripts.ts';

export interface Session {
  sessionId: string;
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
  createdAt: number;
  /** The context that owns the session's tasks: `session:<id>` without auth. */
  owner: string;
}

export interface SessionLimits {
  /** The most live sessions of one principal (only with authentication); 0: no cap. */
  maxPerPrincipal: number;
  /** The most live sessions initialized from one client address; 0: no cap. */
  maxPerAddress: number;
}

export const SessionCap = {
  PerPrincipal: 'sessions_per_principal',
  PerAddress: 'sessions_per_address',
} as const;
export type SessionCap = (typeof SessionCap)[keyof typeof SessionCap];

/** Where an initialize comes from, and so what it is counted against. */
export interface SessionOrigin {
  /** The authenticated principal (`principal:<name>`); undefined without authentication. */
  principal: string | undefined;
  address: string;
  /** Its rate-limit charge (RateLimiter.chargeInitialize). */
  charge: RateCharge;
}

export type SessionAdmission =
  | { ok: true }
  /** A rate limit refused it: the number of the charge's bucket that did (RateLimiter.verdictOf). */
  | { ok: false; refusedBucket: number }
  /** The principal or the address already has `max` live sessions. */
  | { ok: false; cap: SessionCap; max: number };

const NO_CAPS: SessionLimits = { maxPerPrincipal: 0, maxPerAddress: 0 };

/**
 * Sessions whose fields one process keeps (SessionStore.touch): a session's fields never change, so a request of a
 * known session only checks in Redis that it still exists. The oldest entry leaves first; at about 1 KB each the
 * cache holds at most a few MB.
 */
export const SESSION_CACHE_ENTRIES = 5000;

interface KnownSession {
  session: Session;
  /** Where it is counted (create-session-6.lua) and until when: what #keepCounted needs. */
  address: string;
  countedUntil: number;
}

export class SessionStore {
  readonly #scripts: RedisScripts;
  /**
   * How long a session counts under the caps after its last refresh: its idle timeout and a quarter more, so that
   * a request refreshes its entries at most once per quarter of the timeout (one extra round trip), and a session
   * that expired holds its slot at most that quarter longer.
   */
  readonly #countedForMs: number;
  /** Fields of sessions this process served, by id; the session's existence is still checked in Redis each time. */
  readonly #known = new Map<string, KnownSession>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly idleTtlMs: number,
    private readonly limits: SessionLimits = NO_CAPS,
  ) {
    this.#scripts = RedisScripts.on(redis);
    this.#countedForMs = idleTtlMs + Math.ceil(idleTtlMs / 4);
  }

  /**
   * Stores the session if its origin is within its limits, in one round trip: the initialize rate limits of
   * `origin.charge`, then the caps on live sessions of the principal (with authentication) and of the address. A
   * refused session is not stored.
   */
  async create(session: Session, origin: SessionOrigin, now = Date.now()): Promise<SessionAdmission> {
    const maxPerPrincipal = origin.principal !== undefined ? this.limits.maxPerPrincipal : 0;
    const { maxPerAddress } = this.limits;
    const countedUntil = now + this.#countedForMs;
    const fields = {
      sessionId: session.sessionId,
      protocolVersion: session.protocolVersion,
      clientCapabilities: JSON.stringify(session.clientCapabilities),
      clientInfo: JSON.stringify(session.clientInfo),
      createdAt: String(session.createdAt),
      owner: session.owner,
      // Where it is counted; a session created with both caps off has no `countedUntil` and is never refreshed.
      address: origin.address,
      ...(maxPerPrincipal > 0 || maxPerAddress > 0 ? { countedUntil: String(countedUntil) } : {}),
    };
    const { charge } = origin;
    const reply = await this.#scripts.createSession({
      keys: {
        session: this.keys.session(session.sessionId),
        ownerSessions: this.keys.ownerSessions(session.owner),
        addressSessions: this.keys.addressSessions(origin.address),
        counters: charge.countersKey,
      },
      buckets: charge.buckets,
      sessionId: session.sessionId,
      now,
      idleMs: this.idleTtlMs,
      countedUntil,
      windowMs: charge.windowMs,
      maxPerOwner: maxPerPrincipal,
      maxPerAddress,
      refusalCounters: { rate: charge.refusalCounters.hit, cap: SecurityEvent.LimitExceeded },
      fields,
    });
    switch (reply.verdict) {
      case Reply.CREATED:
        return { ok: true };
      case Reply.OWNER_CAP:
        return { ok: false, cap: SessionCap.PerPrincipal, max: maxPerPrincipal };
      case Reply.ADDRESS_CAP:
        return { ok: false, cap: SessionCap.PerAddress, max: maxPerAddress };
      default:
        return { ok: false, refusedBucket: reply.bucket };
    }
  }

  /**
   * The session, its idle timer restarted, and the request counted against the rate limits of `charge`; undefined
   * when the session never existed, expired or was deleted (then nothing is counted). One round trip: every
   * request pays for it. `refused` is the number of the bucket that refused the request (RateLimiter.verdictOf).
   */
  async touch(
    sessionId: string,
    charge: RateCharge,
  ): Promise<{ session: Session; refused: Exclude<Opened, -1> } | undefined> {
    const cached = this.#known.get(sessionId);
    const touched = await this.#scripts.touchSession({
      ...this.#openingCall(sessionId, charge),
      known: cached !== undefined,
    });
    if (!touched) {
      // Expired, or deleted through any replica: forgotten here too.
      this.#known.delete(sessionId);
      return undefined;
    }
    let known = cached;
    if (!known) {
      const session = parseSession(touched.fields);
      if (!session) return undefined;
      known = {
        session,
        address: touched.fields['address'] ?? '',
        countedUntil: Number(touched.fields['countedUntil']),
      };
      if (this.#known.size >= SESSION_CACHE_ENTRIES) this.#known.delete(this.#known.keys().next().value as string);
      this.#known.set(sessionId, known);
    }
    await this.#keepCounted(known);
    return { session: known.session, refused: touched.refused };
  }

  /**
   * For a session whose fields this process holds: the session, and the opening of the request (its timer, its
   * existence check and its rate-limit count, as `touch` does) left to the method's own script. Undefined for a
   * session this process does not know: `touch` it first.
   */
  deferOpening(sessionId: string, charge: RateCharge): RequestOpening<Session> | undefined {
    const known = this.#known.get(sessionId);
    if (!known) return undefined;
    const opened = async (outcome: Opened) => {
      if (outcome < 0) this.#known.delete(sessionId);
      else await this.#keepCounted(known);
    };
    const open = async () => {
      const touched = await this.touch(sessionId, charge);
      return touched ? touched.refused : -1;
    };
    return new RequestOpening(this.#openingCall(sessionId, charge), known.session, open, opened);
  }

  /** What opening a request of the session charged with `charge` needs (touch-session-6.lua, RequestOpening). */
  #openingCall(sessionId: string, charge: RateCharge): OpeningCall {
    return {
      keys: { session: this.keys.session(sessionId), counters: charge.countersKey },
      buckets: charge.buckets,
      idleMs: this.idleTtlMs,
      windowMs: charge.windowMs,
      refusalCounters: charge.refusalCounters,
    };
  }

  /** The session without restarting its idle timer (for workers, which act for the session, not as it). */
  async get(sessionId: string): Promise<Session | undefined> {
    return parseSession(await this.redis.hgetall(this.keys.session(sessionId)));
  }

  /** Ends the session and frees its slots under the caps at once. */
  async delete(sessionId: string): Promise<boolean> {
    this.#known.delete(sessionId);
    const key = this.keys.session(sessionId);
    const [owner, address] = await this.redis.hmget(key, 'owner', 'address');
    const multi = this.redis.multi().del(key);
    if (owner) multi.zrem(this.keys.ownerSessions(owner), sessionId);
    if (address) multi.zrem(this.keys.addressSessions(address), sessionId);
    const [deleted] = (await multi.exec()) ?? [];
    return deleted?.[1] === 1;
  }

  /**
   * A session in use stays counted: once a request keeps it alive past the moment its entries stop counting, the
   * entries are pushed out (refresh-session-3.lua). A failed refresh is not the request's problem; the next one
   * retries.
   */
  async #keepCounted(known: KnownSession): Promise<void> {
    const now = Date.now();
    // NaN (never counted) compares false. Another replica may have refreshed it since we read it: then this one
    // refreshes once more than needed, which is harmless.
    if (!(known.countedUntil < now + this.idleTtlMs)) return;
    const countedUntil = now + this.#countedForMs;
    const { session } = known;
    await this.#scripts
      .refreshSession({
        keys: {
          session: this.keys.session(session.sessionId),
          ownerSessions: this.keys.ownerSessions(session.owner),
          addressSessions: this.keys.addressSessions(known.address),
        },
        sessionId: session.sessionId,
        countedUntil,
      })
      .then(() => {
        known.countedUntil = countedUntil;
      })
      .catch(() => undefined);
  }
}

function parseSession(hash: Record<string, string> | null | undefined): Session | undefined {
  if (!hash || hash['sessionId'] === undefined) return undefined;
  return {
    sessionId: hash['sessionId'],
    protocolVersion: hash['protocolVersion'] ?? '',
    clientCapabilities: JSON.parse(hash['clientCapabilities'] ?? '{}') as Record<string, unknown>,
    clientInfo: JSON.parse(hash['clientInfo'] ?? '{}') as Record<string, unknown>,
    createdAt: Number(hash['createdAt']),
    owner: hash['owner'] ?? '',
  };
}
