// Rate limits on task operations, shared by every api replica through Redis (T-SEC-3), and the counters of
// suspicious events that operators watch (T-AUDIT-1): failed task lookups, throttled requests, bad tokens.
import { Counter, type Registry } from 'prom-client';
import type { KeySpace } from '../keys.ts';
import { collectFromRedis, METRICS_PREFIX } from '../metrics-collect.ts';
import type { RedisClient } from '../redis.ts';
import type { RateBucket } from '../request-opening.ts';
import { RedisScripts } from '../scripts.ts';

export interface RateLimits {
  /** Length of a fixed window, ms. */
  windowMs: number;
  /** Task operations per principal (the task owner) per window; 0: no limit. */
  perPrincipal: number;
  /** Task operations per client address per window; 0: no limit. */
  perAddress: number;
  /** Failed task lookups (unknown or foreign ids) per principal per window; 0: no limit. */
  failedLookups: number;
  /** Failed task lookups per client address per window (every principal behind it together); 0: no limit. */
  failedLookupsPerAddress: number;
  /** `initialize` requests per principal per window (with authentication); 0: no limit. */
  initializePerPrincipal: number;
  /** `initialize` requests per client address per window; 0: no limit. */
  initializePerAddress: number;
}

export const RateScope = {
  Principal: 'principal',
  Address: 'address',
  FailedLookupsOfPrincipal: 'failed-lookups-principal',
  FailedLookupsOfAddress: 'failed-lookups-address',
  InitializeOfPrincipal: 'initialize-principal',
  InitializeOfAddress: 'initialize-address',
} as const;
export type RateScope = (typeof RateScope)[keyof typeof RateScope];

/** The counters kept in Redis for monitoring; every api replica adds to the same ones. */
export const SecurityEvent = {
  FailedLookup: 'failed_lookups',
  ThrottledRequest: 'throttled_requests',
  ThrottledLookup: 'throttled_lookups',
  AuthFailure: 'auth_failures',
  ForeignSession: 'foreign_session_uses',
  LimitExceeded: 'limits_exceeded',
} as const;
export type SecurityEvent = (typeof SecurityEvent)[keyof typeof SecurityEvent];

export type RateVerdict = { ok: true } | { ok: false; scope: RateScope; limit: number; retryAfterMs: number };

/**
 * What one request is counted against (RateLimiter.charge, chargeInitialize); SessionStore.touch and
 * SessionStore.create apply it.
 */
export interface RateCharge {
  /** The buckets in the order the script takes them (SCOPES for a request, INITIALIZE_SCOPES for an initialize). */
  buckets: ScopedBucket[];
  windowMs: number;
  /** The hash of security counters, and the counter in it that a refusal by a `hit` or a `check` bucket adds to. */
  countersKey: string;
  refusalCounters: { hit: SecurityEvent; check: SecurityEvent };
  retryAfterMs: number;
}

const SCOPES: readonly RateScope[] = [
  RateScope.Principal,
  RateScope.Address,
  RateScope.FailedLookupsOfPrincipal,
  RateScope.FailedLookupsOfAddress,
];

const INITIALIZE_SCOPES: readonly RateScope[] = [RateScope.InitializeOfPrincipal, RateScope.InitializeOfAddress];

/** A rate-limit bucket and what it limits. */
export type ScopedBucket = RateBucket & { scope: RateScope };

export class RateLimiter {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    readonly limits: RateLimits,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /**
   * What one request of `principal` from `address` is counted against: nothing (`free`), the request limits
   * (`operation`, a task operation), or those and the failed-lookup budgets (`lookup`, a task looked up by id,
   * refused while the principal or the address has too many failed lookups). SessionStore.touch applies it in the
   * same round trip as the session read, and `verdictOf` reads the outcome.
   */
  charge(principal: string, address: string, kind: 'free' | 'operation' | 'lookup', now = Date.now()): RateCharge {
    const { windowMs } = this.limits;
    const counted = kind !== 'free';
    const lookup = kind === 'lookup';
    const limits = [
      counted ? this.limits.perPrincipal : 0,
      counted ? this.limits.perAddress : 0,
      lookup ? this.limits.failedLookups : 0,
      lookup ? this.limits.failedLookupsPerAddress : 0,
    ];
    const window = Math.floor(now / windowMs);
    const subjects = [principal, address, principal, address];
    return {
      buckets: SCOPES.map((scope, i): ScopedBucket => ({
        scope,
        key: this.keys.rateBucket(scope, subjects[i] as string, window),
        limit: limits[i] as number,
        mode: i < 2 ? 'hit' : 'check',
      })),
      windowMs,
      countersKey: this.keys.securityCounters(),
      refusalCounters: { hit: SecurityEvent.ThrottledRequest, check: SecurityEvent.ThrottledLookup },
      retryAfterMs: (window + 1) * windowMs - now,
    };
  }

  /**
   * What a task operation made on a principal's behalf without a request (a child task a worker's tool starts) is
   * counted against: the principal's bucket only, the one its requests to the api fill too.
   */
  chargeOwner(owner: string, now = Date.now()): RateCharge {
    const charge = this.charge(owner, '-', 'operation', now);
    return { ...charge, buckets: charge.buckets.map((bucket, i) => (i === 0 ? bucket : { ...bucket, limit: 0 })) };
  }

  /**
   * What an `initialize` is counted against: the initialize budget of its principal (`principalOwner`; undefined
   * without authentication, where only the address is counted) and of its address. SessionStore.create applies it
   * in the round trip that creates the session, and `verdictOf` reads the outcome.
   */
  chargeInitialize(principal: string | undefined, address: string, now = Date.now()): RateCharge {
    const { windowMs } = this.limits;
    const window = Math.floor(now / windowMs);
    const limits = [principal !== undefined ? this.limits.initializePerPrincipal : 0, this.limits.initializePerAddress];
    const subjects = [principal ?? '-', address];
    return {
      buckets: INITIALIZE_SCOPES.map((scope, i): ScopedBucket => ({
        scope,
        key: this.keys.rateBucket(scope, subjects[i] as string, window),
        limit: limits[i] as number,
        mode: 'hit',
      })),
      windowMs,
      countersKey: this.keys.securityCounters(),
      refusalCounters: { hit: SecurityEvent.ThrottledRequest, check: SecurityEvent.ThrottledLookup },
      retryAfterMs: (window + 1) * windowMs - now,
    };
  }

  /**
   * Applies a charge on its own, for a request that has no session to read in the same round trip (a stateless
   * 2026-07-28 request): the same buckets and the same verdict as SessionStore.touch gives.
   */
  async admit(charge: RateCharge): Promise<RateVerdict> {
    const multi = this.redis.multi();
    const used = charge.buckets.filter((bucket) => bucket.limit > 0);
    for (const bucket of used) {
      if (bucket.mode === 'hit') multi.incr(bucket.key).pexpire(bucket.key, charge.windowMs * 2, 'NX');
      else multi.get(bucket.key);
    }
    const replies = (await multi.exec()) ?? [];
    let reply = 0;
    let refused = 0;
    for (const bucket of used) {
      const count = Number(replies[reply]?.[1] ?? 0);
      reply += bucket.mode === 'hit' ? 2 : 1;
      const over = bucket.mode === 'hit' ? count > bucket.limit : count >= bucket.limit;
      if (over) {
        refused = charge.buckets.indexOf(bucket) + 1;
        break;
      }
    }
    if (refused > 0) {
      const counter =
        charge.buckets[refused - 1]?.mode === 'hit' ? charge.refusalCounters.hit : charge.refusalCounters.check;
      await this.redis.hincrby(charge.countersKey, counter, 1);
    }
    return this.verdictOf(charge, refused);
  }

  /** The verdict on a charged request, given the number of the bucket that refused it (0: none). */
  verdictOf(charge: RateCharge, refused: number): RateVerdict {
    if (refused === 0) return { ok: true };
    return {
      ok: false,
      scope: charge.buckets[refused - 1]?.scope as RateScope,
      limit: charge.buckets[refused - 1]?.limit ?? 0,
      retryAfterMs: charge.retryAfterMs,
    };
  }

  /**
   * Counts a lookup of an unknown, expired or foreign task id against the caller's failed-lookup budgets; whether a
   * budget is spent now (the next lookup in this window is refused).
   */
  async recordFailedLookup(principal: string, address: string): Promise<boolean> {
    const window = Math.floor(Date.now() / this.limits.windowMs);
    const counts = await this.#scripts.recordFailedLookup({
      keys: {
        principalBucket: this.keys.rateBucket(RateScope.FailedLookupsOfPrincipal, principal, window),
        addressBucket: this.keys.rateBucket(RateScope.FailedLookupsOfAddress, address, window),
        counters: this.keys.securityCounters(),
      },
      windowMs: this.limits.windowMs,
      counter: SecurityEvent.FailedLookup,
    });
    const spent = (count: number, limit: number) => limit > 0 && count >= limit;
    return (
      spent(counts.principal, this.limits.failedLookups) || spent(counts.address, this.limits.failedLookupsPerAddress)
    );
  }

  /** Adds one to a security counter. */
  async count(event: SecurityEvent): Promise<void> {
    await this.redis.hincrby(this.keys.securityCounters(), event, 1);
  }

  /** Every security counter (zero for those never incremented), summed over all replicas since the prefix began. */
  async counters(): Promise<Record<SecurityEvent, number>> {
    const stored = await this.redis.hgetall(this.keys.securityCounters());
    return Object.fromEntries(
      Object.values(SecurityEvent).map((event) => [event, Number(stored[event] ?? 0)]),
    ) as Record<SecurityEvent, number>;
  }
}

/** Exposes the security counters on /metrics, read from Redis at scrape time (the same value on every replica). */
export function registerSecurityCounters(registry: Registry, rates: RateLimiter): void {
  // A counter (it only grows, but for a Redis that lost its data, which Prometheus reads as a counter reset).
  new Counter({
    name: `${METRICS_PREFIX}security_events_total`,
    help:
      'Suspicious or refused requests since the key prefix was first used, cluster-wide (aggregate with max()): ' +
      'failed task lookups, throttled requests and lookups, bad tokens, foreign session use, limits hit',
    labelNames: ['event'],
    registers: [registry],
    collect() {
      // Bounded, so that a Redis outage cannot hang the scrape (see collectFromRedis).
      return collectFromRedis(this, async () => {
        this.reset();
        for (const [event, count] of Object.entries(await rates.counters())) this.inc({ event }, count);
      });
    },
  });
}
