// MRTR `requestState` (C26-MRTR-5): it comes back from the client, so it is signed (HMAC-SHA256) and binds the
// caller, the call it resumes, the tool and a digest of its arguments, with an expiry. The key is shared by every
// api replica through Redis (created once, by whichever replica needs it first), so a retry may reach any replica.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '@mcp-tasks/engine';
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

export class RequestStateSigner {
  #key: Promise<Buffer> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyName: string,
  ) {}

  async sign(state: RequestState): Promise<string> {
    const payload = Buffer.from(JSON.stringify(state)).toString('base64url');
    return `${payload}.${this.#mac(await this.#secret(), payload)}`;
  }

  /** The state if it is ours, unexpired and for this caller, tool and arguments; otherwise -32602. */
  async verify(token: unknown, expected: Omit<RequestState, 'call' | 'exp'>): Promise<RequestState> {
    const invalid = () =>
      new ProtocolError(ErrorCode.InvalidParams, 'Invalid requestState: not issued for this request, or expired');
    if (typeof token !== 'string' || token.length > 4096) throw invalid();
    const [payload, mac] = token.split('.');
    if (payload === undefined || mac === undefined) throw invalid();
    const want = Buffer.from(this.#mac(await this.#secret(), payload));
    const given = Buffer.from(mac);
    if (want.length !== given.length || !timingSafeEqual(want, given)) throw invalid();
    let state: RequestState;
    try {
      state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as RequestState;
    } catch {
      throw invalid();
    }
    if (
      state.owner !== expected.owner ||
      state.tool !== expected.tool ||
      state.args !== expected.args ||
      !(state.exp > Date.now())
    )
      throw invalid();
    return state;
  }

  #mac(secret: Buffer, payload: string): string {
    return createHmac('sha256', secret).update(payload).digest('base64url');
  }

  #secret(): Promise<Buffer> {
    this.#key ??= (async () => {
      await this.redis.set(this.keyName, randomBytes(32).toString('base64'), 'NX');
      const stored = await this.redis.get(this.keyName);
      if (!stored) throw new Error('The requestState key could not be read back from Redis');
      return Buffer.from(stored, 'base64');
    })();
    this.#key.catch(() => {
      this.#key = undefined;
    });
    return this.#key;
  }
}

export function argumentsDigest(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('base64url');
}
