// The keys that sign MRTR requestStates (apps/api/src/request-state.ts, C26-MRTR-5), on a real
// Redis with the signers' clocks moved by the test: rotation with an overlap, expiry, forgeries, and a key set lost
// from Redis, which two replicas replace and agree on again without a restart. The same boundary end to end,
// through two api replicas, is in test/integration/hostile-requests.test.ts.
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { Redis } from 'ioredis';
import { KeySpace, SigningKeys } from '@mcp-tasks/engine';
import { ProtocolError } from '@mcp-tasks/protocol';
import {
  REQUEST_STATE_TTL_MS,
  RequestStateSigner,
  type RequestState,
  type SigningKeyTiming,
} from '@mcp-tasks/api/request-state';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const HOUR = 3_600_000;
const ROTATION = 24 * HOUR;
const OVERLAP = 15 * 60_000;
const RECHECK = 5000;
const BOUND = { owner: 'principal:key:alice', tool: 'ask', args: 'digest-of-the-arguments' };

describe('C26-MRTR-5: requestState signing keys (rotation, overlap, expiry, a lost key set; real Redis)', () => {
  let redis: Redis;
  let keys: KeySpace;
  let release: () => Promise<void>;
  /** Every signer's clock: starts at the beginning of the next rotation period (well ahead of the real time). */
  let now: number;
  let reads: number;

  before(async () => {
    redis = new Redis(await sharedRedisUrl());
    release = track('request-state redis', () => redis.disconnect());
  });
  after(() => release());
  beforeEach(() => {
    keys = new KeySpace(uniquePrefix());
    now = (Math.floor(Date.now() / ROTATION) + 1) * ROTATION;
    reads = 0;
  });

  /** A replica's signer; its reads of Redis are counted (the same Redis, observed, not replaced). */
  function replica(timing: Partial<SigningKeyTiming> = {}): RequestStateSigner {
    const counted = new Proxy(redis, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== 'get' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    return new RequestStateSigner(new SigningKeys(counted, keys), {
      rotationMs: ROTATION,
      overlapMs: OVERLAP,
      recheckMs: RECHECK,
      now: () => now,
      ...timing,
    });
  }

  const sign = (signer: RequestStateSigner, call = 'call-1') => signer.sign({ call, ...BOUND });

  async function refused(signer: RequestStateSigner, token: unknown, expected = BOUND): Promise<void> {
    const error = await signer.verify(token, expected).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error, String(token)).to.be.instanceOf(ProtocolError);
    expect((error as ProtocolError).code).to.equal(-32602);
    expect((error as ProtocolError).message).to.equal('Invalid requestState: not issued for this request, or expired');
  }

  /** A state for `period` signed with the key Redis holds for it (as only someone with Redis access could). */
  async function signedWithStoredKey(period: number, state: RequestState): Promise<string> {
    const stored = (await redis.get(keys.requestStateKey(period))) as string;
    const [generation, secret] = [stored.slice(0, stored.indexOf(':')), stored.slice(stored.indexOf(':') + 1)];
    const signed = `${period}.${generation}.${Buffer.from(JSON.stringify(state)).toString('base64url')}`;
    const mac = createHmac('sha256', Buffer.from(secret, 'base64')).update(signed).digest('base64url');
    return `${signed}.${mac}`;
  }

  it('a state signed on one replica verifies on another, binds caller, tool and arguments, and carries its key period', async () => {
    const [a, b] = [replica(), replica()];
    const token = await sign(a);
    expect(token.split('.')[0]).to.equal(String(now / ROTATION));
    const state = await b.verify(token, BOUND);
    expect(state).to.deep.include({ call: 'call-1', ...BOUND, exp: now + REQUEST_STATE_TTL_MS });
    await refused(b, token, { ...BOUND, owner: 'principal:key:mallory' });
    await refused(b, token, { ...BOUND, tool: 'other' });
    await refused(b, token, { ...BOUND, args: 'digest-of-other-arguments' });
  });

  it('forged states are refused with the same -32602, and a forged key id reads Redis at most once per period and recheck time', async () => {
    const signer = replica();
    const token = await sign(signer);
    const [period, generation, payload, mac] = token.split('.') as [string, string, string, string];
    const forged = JSON.stringify({ call: 'call-2', ...BOUND, exp: now + HOUR });
    const before = reads;
    for (const bad of [
      undefined,
      42,
      '',
      'x'.repeat(5000),
      'not.a.state',
      `${period}.${generation}.${payload}`,
      `${period}.${generation}.${payload}.${mac.slice(0, -2)}AA`,
      `${period}.${generation}.${Buffer.from(forged).toString('base64url')}.${mac}`,
      `${period}.ffffffffffff.${payload}.${mac}`,
      `${period}.${generation}.${payload}.${mac}.extra`,
      `${Number(period) + 5}.${generation}.${payload}.${mac}`,
      `-1.${generation}.${payload}.${mac}`,
      `1e3.${generation}.${payload}.${mac}`,
    ]) {
      await refused(signer, bad);
    }
    // The key of the current period was read when it signed, within the recheck time: no forgery read Redis.
    expect(reads - before).to.equal(0);
    now += RECHECK;
    for (let i = 0; i < 20; i++) await refused(signer, `${period}.${String(i).padStart(12, '0')}.${payload}.${mac}`);
    expect(reads - before).to.equal(1);
  });

  it('expired: a state is refused after its 10 minutes, though its key still verifies', async () => {
    const signer = replica();
    const token = await sign(signer);
    now += REQUEST_STATE_TTL_MS - 1;
    await signer.verify(token, BOUND);
    now += 1;
    await refused(signer, token);
  });

  it('a key signs for its rotation period; the previous key still verifies within the overlap, and is refused after it', async () => {
    const signer = replica();
    const period = now / ROTATION;
    now += ROTATION - 60_000;
    const late = await sign(signer);
    expect((await signer.verify(late, BOUND)).exp).to.equal(now + REQUEST_STATE_TTL_MS);
    // With an overlap shorter than a state's life, a state lives until its key retires (the end of its period plus
    // the overlap), not longer.
    const short = replica({ overlapMs: 5 * 60_000 });
    expect((await short.verify(await sign(short), BOUND)).exp).to.equal((period + 1) * ROTATION + 5 * 60_000);
    now = (period + 1) * ROTATION + 1000;
    const fresh = await sign(signer);
    expect(fresh.split('.')[0], 'a new period signs with a new key').to.equal(String(period + 1));
    expect(fresh.split('.')[1]).not.to.equal(late.split('.')[1]);
    await signer.verify(late, BOUND);
    await replica().verify(late, BOUND);
    // Past the overlap the old key is retired: even a state that claims a later expiry is refused, without a read.
    const longLived = await signedWithStoredKey(period, { call: 'call-1', ...BOUND, exp: now + 7 * 24 * HOUR });
    await signer.verify(longLived, BOUND);
    now = (period + 1) * ROTATION + OVERLAP;
    const before = reads;
    await refused(signer, longLived);
    await refused(signer, late);
    expect(reads).to.equal(before);
    expect((await signer.verify(await sign(signer), BOUND)).exp).to.equal(now + REQUEST_STATE_TTL_MS);
  });

  it('a key set lost from Redis (FLUSHALL, a restart without persistence) is replaced, and two replicas agree on the new key within the recheck time', async () => {
    const [a, b] = [replica(), replica()];
    const before = await sign(a);
    await b.verify(before, BOUND);
    // The keys are gone; both replicas still hold the old one.
    await redis.del(keys.requestStateKey(now / ROTATION));
    now += RECHECK;
    // The first replica to sign after the recheck time creates a new key; the other reads it when it sees its id.
    const after = await sign(b);
    expect(after.split('.')[1]).not.to.equal(before.split('.')[1]);
    await a.verify(after, BOUND);
    expect((await sign(a)).split('.')[1]).to.equal(after.split('.')[1]);
    // A state signed with the lost key is refused, like any invalid state: its client starts over.
    await refused(a, before);
    await refused(b, before);
  });
});
