// The connections of one worker process to one upstream (docs/gateway.md, "Connections"): at most `concurrency`
// calls in flight, sharing one connection per lane (lanes.ts); connections opened on demand within
// `connectTimeoutMs`, closed after `idleMs` without calls; after a failed attempt the upstream is unavailable until
// the next one, which backs off exponentially.
import type { GatewayState, KeySpace, UpstreamStatus } from '@mcp-tasks/engine';
import type { Logger } from '@mcp-tasks/runtime';
import { SharedSessions } from './affinity.ts';
import type { UpstreamConfig } from './config.ts';
import { UpstreamConnection, type SharedSession } from './connection.ts';
import { SHARED_LANE, type Lane } from './lanes.ts';
import { upstreamText } from './redact.ts';

/** After a failed attempt to connect, the next waits this long, doubling up to the maximum while they fail. */
export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 30_000;

/** The upstream could not be reached: the message says so in our words (docs/gateway.md). */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
  constructor(
    upstream: string,
    readonly reason: string,
  ) {
    super(`upstream '${upstream}' is unavailable: ${reason}`);
  }
}

export interface Lease {
  connection: UpstreamConnection;
  /** Gives the slot back; the connection stays for the next call. */
  release(): void;
  /** The connection failed the call (it closed, or the upstream no longer knows its session): it is not used again. */
  discard(): Promise<void>;
}

export interface PoolDeps {
  log: Logger;
  /** Redis, for sessions shared across workers (HTTP upstreams with an affinity); absent: nothing is shared. */
  shared?: { gateway: GatewayState; keys: KeySpace };
  /** A connection of the shared lane opened, or the upstream said its tools changed: list them again. */
  onToolsChanged(pool: UpstreamPool): void;
  /** The upstream's state changed (for operators). */
  onState(pool: UpstreamPool): void;
}

interface OpenLane {
  lane: Lane;
  connection?: UpstreamConnection;
  opening?: Promise<UpstreamConnection>;
  /** Its Streamable HTTP session as stored in Redis, when shared across workers. */
  stored?: string;
  /** A stored session the upstream no longer knows: the next open replaces it. */
  dead?: string;
  calls: number;
  lastUsed: number;
  idleTimer?: NodeJS.Timeout;
}

export class UpstreamPool {
  readonly #lanes = new Map<string, OpenLane>();
  readonly #waiters: (() => void)[] = [];
  readonly #sharedSessions: SharedSessions | undefined;
  #leased = 0;
  #failures = 0;
  #retryAt = 0;
  #state: UpstreamStatus['state'] = 'connecting';
  #reason: string | undefined;
  #since = Date.now();
  #stopped = false;

  constructor(
    readonly upstream: UpstreamConfig,
    private readonly deps: PoolDeps,
  ) {
    this.#sharedSessions =
      deps.shared && upstream.affinity !== 'stateless' && upstream.url !== undefined
        ? new SharedSessions(deps.shared.gateway, deps.shared.keys, upstream)
        : undefined;
  }

  /** The state operators see, and why, since when, and how many connections are open. */
  status(): Pick<UpstreamStatus, 'state' | 'reason' | 'since' | 'connections'> {
    const connections = [...this.#lanes.values()].filter((open) => open.connection && !open.connection.closed).length;
    return {
      state: this.#state,
      ...(this.#reason !== undefined ? { reason: this.#reason } : {}),
      since: this.#since,
      connections,
    };
  }

  /** Epoch ms before which a new attempt to connect is refused (after a failed one); 0 when none is pending. */
  get retryAt(): number {
    return this.#retryAt;
  }

  /** Whether the upstream declared that it runs tools/call as tasks (2025-11-25 `tasks.requests.tools.call`). */
  runsToolTasks(connection: UpstreamConnection): boolean {
    const tasks = connection.client.getServerCapabilities()?.tasks as
      { requests?: { tools?: { call?: unknown } } } | undefined;
    return tasks?.requests?.tools?.call !== undefined;
  }

  /** The connection of the shared lane, opened if need be: where the tools are listed. Takes no call slot. */
  async listingConnection(): Promise<UpstreamConnection> {
    const open = this.#laneOf(SHARED_LANE);
    try {
      return await this.#connectionOf(open);
    } finally {
      if (open.calls === 0) this.#idleLater(open);
    }
  }

  /** A connection for one call on `lane`, waiting for a free slot first; the caller must release the lease. */
  async acquire(lane: Lane, signal: AbortSignal): Promise<Lease> {
    while (this.#leased >= this.upstream.concurrency) await this.#waitForSlot(signal);
    this.#leased++;
    const open = this.#laneOf(lane);
    open.calls++;
    clearTimeout(open.idleTimer);
    let connection: UpstreamConnection;
    try {
      connection = await this.#connectionOf(open);
    } catch (error) {
      this.#endCall(open);
      throw error;
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#endCall(open);
      if (open.stored !== undefined && !connection.closed) this.#sharedSessions?.touch(lane.key, open.stored);
    };
    return {
      connection,
      release,
      discard: async () => {
        if (open.connection === connection) {
          open.connection = undefined;
          if (open.stored !== undefined) open.dead = open.stored;
          open.stored = undefined;
        }
        release();
        await connection.close();
      },
    };
  }

  /**
   * A connection to the HTTP session `sessionId` that another worker process opened and left (it died, or handed its
   * job back), to follow a task the upstream keeps there. It takes a slot like any call; releasing it closes the
   * connection and leaves the session on the server (end it with `terminate()` once the task's result is taken).
   */
  async rejoin(join: SharedSession, signal: AbortSignal): Promise<Lease> {
    while (this.#leased >= this.upstream.concurrency) await this.#waitForSlot(signal);
    this.#leased++;
    let connection: UpstreamConnection;
    try {
      connection = await this.#open({ lane: SHARED_LANE, calls: 1, lastUsed: Date.now() }, join);
    } catch (error) {
      this.#freeSlot();
      throw error;
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#freeSlot();
      void connection.close();
    };
    return { connection, release, discard: () => Promise.resolve(release()) };
  }

  async close(): Promise<void> {
    this.#stopped = true;
    const lanes = [...this.#lanes.values()];
    this.#lanes.clear();
    await Promise.all(
      lanes.map(async (open) => {
        clearTimeout(open.idleTimer);
        const connection = open.connection ?? (await open.opening?.catch(() => undefined));
        await connection?.close();
      }),
    );
  }

  #laneOf(lane: Lane): OpenLane {
    let open = this.#lanes.get(lane.key);
    if (!open) {
      this.#evictIdle();
      open = { lane, calls: 0, lastUsed: Date.now() };
      this.#lanes.set(lane.key, open);
    }
    open.lastUsed = Date.now();
    return open;
  }

  /** At most `concurrency` lanes besides the shared one: the least recently used idle one makes room. */
  #evictIdle(): void {
    const keyed = [...this.#lanes.values()].filter((open) => open.lane !== SHARED_LANE);
    if (keyed.length < this.upstream.concurrency) return;
    const idle = keyed.filter((open) => open.calls === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (idle) this.#closeLane(idle);
  }

  async #connectionOf(open: OpenLane): Promise<UpstreamConnection> {
    if (open.connection && !open.connection.closed) return open.connection;
    open.opening ??= this.#open(open).finally(() => (open.opening = undefined));
    const connection = await open.opening;
    open.connection = connection;
    return connection;
  }

  async #open(open: OpenLane, join?: SharedSession): Promise<UpstreamConnection> {
    const { upstream } = this;
    if (this.#stopped) throw new UpstreamUnavailableError(upstream.name, 'the worker is stopping');
    if (Date.now() < this.#retryAt && this.#reason !== undefined) {
      throw new UpstreamUnavailableError(upstream.name, this.#reason);
    }
    // An unavailable upstream stays so while it is tried again: operators and clients see it unavailable until a
    // connection succeeds, not a state that flickers to connecting on every attempt of the backoff.
    if (this.status().connections === 0 && this.#state !== 'unavailable') this.#setState('connecting', this.#reason);
    const connect = (shared: SharedSession | undefined) =>
      UpstreamConnection.open(
        upstream,
        this.deps.log,
        {
          onToolsChanged: () => this.deps.onToolsChanged(this),
          onClosed: (closed) => this.#closed(open, closed),
        },
        { relaysUnmarked: open.lane.relaysUnmarked, ...(shared ? { join: shared } : {}) },
      );
    let connection: UpstreamConnection;
    try {
      if (join === undefined && open.lane.sharedAcrossWorkers && this.#sharedSessions) {
        const shared = await this.#sharedSessions.connect(open.lane.key, connect, open.dead);
        connection = shared.connection;
        open.stored = shared.stored;
        open.dead = undefined;
      } else {
        connection = await connect(join);
      }
    } catch (error) {
      this.#failed(error);
      throw new UpstreamUnavailableError(upstream.name, this.#reason ?? String(error));
    }
    this.#failures = 0;
    this.#retryAt = 0;
    this.#setState('ready', undefined);
    if (this.#stopped) {
      await connection.close();
      throw new UpstreamUnavailableError(upstream.name, 'the worker is stopping');
    }
    if (open.lane === SHARED_LANE) this.deps.onToolsChanged(this);
    return connection;
  }

  #failed(error: unknown): void {
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.#failures);
    this.#failures++;
    this.#retryAt = Date.now() + delay;
    // The reason reaches clients, logs and operators: whatever failed, the upstream's words in it are redacted.
    this.#setState('unavailable', upstreamText(this.upstream, error instanceof Error ? error.message : String(error)));
  }

  #closed(open: OpenLane, connection: UpstreamConnection): void {
    if (open.connection === connection) open.connection = undefined;
    if (this.#stopped) return;
    // An idle stop is no news; the upstream ending it is, until the next connection opens.
    const ended = connection.closedByUs ? undefined : connection.ended;
    if (this.status().connections === 0) this.#setState('idle', ended === undefined ? undefined : `it ${ended}`);
  }

  #endCall(open: OpenLane): void {
    open.calls--;
    open.lastUsed = Date.now();
    if (open.calls === 0) this.#idleLater(open);
    this.#freeSlot();
  }

  #idleLater(open: OpenLane): void {
    clearTimeout(open.idleTimer);
    open.idleTimer = setTimeout(() => {
      if (open.calls === 0 && this.#lanes.get(open.lane.key) === open) this.#closeLane(open);
    }, this.upstream.idleMs);
    open.idleTimer.unref();
  }

  #closeLane(open: OpenLane): void {
    clearTimeout(open.idleTimer);
    this.#lanes.delete(open.lane.key);
    const connection = open.connection;
    open.connection = undefined;
    if (!connection) return;
    this.deps.log.debug('upstream connection idle: closed', { upstream: this.upstream.name, lane: open.lane.key });
    // A session other workers share stays on the server; one of ours alone is ended there too.
    void (open.stored !== undefined ? connection.close() : connection.terminate());
  }

  #setState(state: UpstreamStatus['state'], reason: string | undefined): void {
    if (state === this.#state && reason === this.#reason) return;
    this.#state = state;
    this.#reason = reason;
    this.#since = Date.now();
    this.deps.onState(this);
  }

  #waitForSlot(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const at = this.#waiters.indexOf(wake);
        if (at >= 0) this.#waiters.splice(at, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(wake);
    });
  }

  #freeSlot(): void {
    this.#leased--;
    this.#waiters.shift()?.();
  }
}
