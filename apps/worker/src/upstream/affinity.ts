// Affinity across workers (docs/gateway.md, "Affinity"). Over Streamable HTTP the upstream's session id lives in
// Redis, so any worker joins the session of a principal (or client session). Over stdio the session is a child
// process of one worker: a lease in Redis names the one worker that runs the upstream's calls, and the others stand
// by (they publish its tools but take none of its jobs) until the lease runs out.
import type { GatewayState, KeySpace } from '@mcp-tasks/engine';
import type { Logger } from '@mcp-tasks/runtime';
import type { UpstreamConfig } from './config.ts';
import type { SharedSession, UpstreamConnection } from './connection.ts';

export interface SharedConnection {
  connection: UpstreamConnection;
  /** The session as stored in Redis (undefined: the server keeps no sessions, nothing to share). */
  stored: string | undefined;
}

/** Rounds of "someone else changed it meanwhile" before giving up on sharing. */
const MAX_SWAPS = 3;

export class SharedSessions {
  constructor(
    private readonly gateway: GatewayState,
    private readonly keys: KeySpace,
    private readonly upstream: UpstreamConfig,
  ) {}

  /**
   * The connection to the session the calls of `subject` share: the stored one, joined; or, when there is none or
   * it is `dead` (the upstream no longer knows it), a new one, stored unless another worker stored its own first.
   */
  async connect(
    subject: string,
    open: (join: SharedSession | undefined) => Promise<UpstreamConnection>,
    dead: string | undefined,
  ): Promise<SharedConnection> {
    const key = this.keys.gatewayAffinity(this.upstream.name, subject);
    let current = await this.gateway.read(key);
    for (let round = 0; round < MAX_SWAPS; round++) {
      if (current !== undefined && current !== dead) {
        const join = parseSession(current);
        if (join) return { connection: await open(join), stored: current };
      }
      const connection = await open(undefined);
      const session = connection.sharedSession;
      if (!session) return { connection, stored: undefined };
      const value = JSON.stringify(session);
      const swapped = await this.gateway.swap(key, current, value, this.upstream.idleMs);
      if (swapped.done) return { connection, stored: value };
      // Another worker stored its session first: that one is the principal's, ours is ended.
      await connection.terminate();
      current = swapped.current;
    }
    throw new Error('the shared upstream session kept changing under this worker');
  }

  /** Keeps the stored session for another `idleMs` (a call used it); best effort. */
  touch(subject: string, stored: string): void {
    const key = this.keys.gatewayAffinity(this.upstream.name, subject);
    this.gateway.swap(key, stored, stored, this.upstream.idleMs).catch(() => undefined);
  }
}

function parseSession(value: string): SharedSession | undefined {
  try {
    const parsed = JSON.parse(value) as Partial<SharedSession>;
    return typeof parsed.sessionId === 'string' && typeof parsed.protocolVersion === 'string'
      ? { sessionId: parsed.sessionId, protocolVersion: parsed.protocolVersion }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The lease of the worker that runs a stateful stdio upstream's calls: taken when free, renewed at a third of its
 * length, given back on close. A renewal that fails (Redis unreachable, or another worker holds it) ends the hold
 * at once: this worker stops taking the upstream's jobs rather than risk two workers with two states.
 */
export class OwnerLease {
  #held = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly gateway: GatewayState,
    private readonly key: string,
    private readonly holder: string,
    private readonly leaseMs: number,
    private readonly log: Logger,
    private readonly onChange: (held: boolean) => void,
  ) {}

  get held(): boolean {
    return this.#held;
  }

  /** Tries once now, then keeps trying (or renewing) every third of the lease. */
  async start(): Promise<void> {
    await this.#beat();
    this.#timer = setInterval(() => void this.#beat(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    if (this.#held) await this.gateway.swap(this.key, this.holder, undefined).catch(() => undefined);
    this.#held = false;
  }

  async #beat(): Promise<void> {
    let held: boolean;
    try {
      const swapped = await this.gateway.swap(
        this.key,
        this.#held ? this.holder : undefined,
        this.holder,
        this.leaseMs,
      );
      // A worker that restarted under the same name finds its own lease.
      held = swapped.done || swapped.current === this.holder;
    } catch (error) {
      this.log.warn('upstream lease not renewed', { key: this.key, error: String(error) });
      held = false;
    }
    if (this.#stopped || held === this.#held) return;
    this.#held = held;
    this.onChange(held);
  }
}
