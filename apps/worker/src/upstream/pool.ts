// The connections of one worker process to one upstream: at most `concurrency` calls at once, each on a session of
// its own; a primary session that stays open (it lists the tools and hears list_changed) and is restarted with
// exponential backoff when it dies.
import type { Logger } from '@mcp-tasks/engine';
import type { UpstreamConfig } from './config.ts';
import { UpstreamSession } from './session.ts';

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export interface Lease {
  session: UpstreamSession;
  release(): void;
}

export class UpstreamPool {
  readonly #idle: UpstreamSession[] = [];
  readonly #all = new Set<UpstreamSession>();
  readonly #waiters: (() => void)[] = [];
  #leased = 0;
  #primary: UpstreamSession | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #stopped = false;

  constructor(
    readonly upstream: UpstreamConfig,
    private readonly log: Logger,
    /** Called when the upstream's tool list may have changed: a list_changed, or a (re)started primary session. */
    private readonly onToolsChanged: (pool: UpstreamPool) => void,
  ) {}

  /** Opens the primary session; when that fails, keeps trying in the background (with backoff) and says so. */
  async start(): Promise<void> {
    try {
      await this.#openPrimary();
    } catch (error) {
      this.log.error('upstream not reachable; retrying', {
        upstream: this.upstream.name,
        error: (error as Error).message,
      });
      this.#scheduleRestart();
    }
  }

  /** The primary session, when it is up. */
  get primary(): UpstreamSession | undefined {
    return this.#primary && !this.#primary.closed ? this.#primary : undefined;
  }

  /** Whether the upstream declared that it runs tools/call as tasks (2025-11-25 `tasks.requests.tools.call`). */
  runsToolTasks(): boolean {
    const tasks = this.primary?.client.getServerCapabilities()?.tasks as
      { requests?: { tools?: { call?: unknown } } } | undefined;
    return tasks?.requests?.tools?.call !== undefined;
  }

  /** A session for one call, waiting for a free slot first; the caller must release it. */
  async lease(signal: AbortSignal): Promise<Lease> {
    while (this.#leased >= this.upstream.concurrency) await this.#waitForSlot(signal);
    this.#leased++;
    let session: UpstreamSession | undefined;
    try {
      while (!session) {
        const idle = this.#idle.pop();
        if (idle === undefined) session = await this.#open();
        else if (!idle.closed) session = idle;
      }
    } catch (error) {
      this.#freeSlot();
      throw error;
    }
    const leased = session;
    let released = false;
    return {
      session: leased,
      release: () => {
        if (released) return;
        released = true;
        if (!leased.closed && !this.#stopped) this.#idle.push(leased);
        this.#freeSlot();
      },
    };
  }

  /**
   * A lease of the HTTP session `sessionId` that another worker process opened and left (it died, or handed its job
   * back), to follow a task the upstream keeps there. It takes a slot like any call; releasing it closes the
   * connection and leaves the session on the server (another attempt may need it: end it with `terminate()` once the
   * task's result is taken).
   */
  async rejoin(sessionId: string, signal: AbortSignal): Promise<Lease> {
    while (this.#leased >= this.upstream.concurrency) await this.#waitForSlot(signal);
    this.#leased++;
    let session: UpstreamSession;
    try {
      session = await this.#open(sessionId);
    } catch (error) {
      this.#freeSlot();
      throw error;
    }
    let released = false;
    return {
      session,
      release: () => {
        if (released) return;
        released = true;
        this.#freeSlot();
        void session.close();
      },
    };
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    await Promise.all([...this.#all].map((session) => session.close()));
  }

  async #openPrimary(): Promise<void> {
    this.#primary = await this.#open();
    this.#idle.push(this.#primary);
    this.#failures = 0;
    this.onToolsChanged(this);
  }

  async #open(rejoin?: string): Promise<UpstreamSession> {
    if (this.#stopped) throw new Error(`upstream '${this.upstream.name}' is shut down`);
    const session = await UpstreamSession.open(
      this.upstream,
      this.log,
      {
        onToolsChanged: () => this.onToolsChanged(this),
        onClosed: (closed) => {
          this.#all.delete(closed);
          const at = this.#idle.indexOf(closed);
          if (at >= 0) this.#idle.splice(at, 1);
          if (closed === this.#primary && !this.#stopped) this.#scheduleRestart();
        },
      },
      rejoin,
    );
    this.#all.add(session);
    if (this.#stopped) await session.close();
    return session;
  }

  #scheduleRestart(): void {
    if (this.#stopped || this.#restartTimer) return;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.#failures);
    this.#failures++;
    this.log.info('restarting upstream connection', { upstream: this.upstream.name, inMs: delay });
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      this.#openPrimary().catch((error: unknown) => {
        this.log.warn('upstream restart failed', { upstream: this.upstream.name, error: (error as Error).message });
        this.#scheduleRestart();
      });
    }, delay);
    this.#restartTimer.unref();
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
