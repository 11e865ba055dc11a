// What the workers' gateways to upstream MCP servers share in Redis (docs/gateway.md): each worker's view of its
// upstreams for operators, the lease of the worker that runs a stateful stdio upstream's calls, and the Streamable
// HTTP sessions that one principal's (or client session's) calls share across workers.
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import { RedisScripts } from './scripts.ts';

/** How one worker sees one of its upstreams (`mcpt overview`, /readyz, the dashboard). */
export interface UpstreamStatus {
  worker: string;
  upstream: string;
  transport: 'stdio' | 'http';
  affinity: 'stateless' | 'per-principal' | 'per-client-session';
  /**
   * `ready`: connected; `idle`: no connection open now (children are started on demand), the last one was fine;
   * `connecting`; `unavailable`: the last attempt failed (`reason`); `standby`: another worker runs its calls (a
   * stateful stdio upstream has one at a time).
   */
  state: 'ready' | 'idle' | 'connecting' | 'unavailable' | 'standby';
  /** Why it is unavailable, in our words (never the upstream's stderr). */
  reason?: string;
  /** Epoch ms of the last change of state. */
  since: number;
  /** Tools published from it (the last listing; kept while it is unavailable). */
  tools: number;
  /**
   * Tools of its last listing the worker left out: beyond the upstream's `maxTools`, or refused by the catalog's
   * admission (docs/catalog.md, "Budgets"); the first few with their reason.
   */
  refused?: number;
  refusedTools?: { tool: string; reason: string }[];
  /** Connections open now (stdio: child processes). */
  connections: number;
  /** Epoch ms of the report; it counts until `at + validMs` (the worker renews it before). */
  at: number;
  validMs: number;
}

export class GatewayState {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    readonly keys: KeySpace,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /** Writes the worker's view of its upstreams (one field per worker and upstream). */
  async report(statuses: readonly UpstreamStatus[]): Promise<void> {
    if (statuses.length === 0) return;
    const fields = statuses.flatMap((status) => [`${status.worker}/${status.upstream}`, JSON.stringify(status)]);
    await this.redis.hset(this.keys.gatewayUpstreams(), ...fields);
  }

  /** Removes a stopping worker's entries. */
  async withdraw(worker: string, upstreams: readonly string[]): Promise<void> {
    if (upstreams.length === 0) return;
    await this.redis.hdel(this.keys.gatewayUpstreams(), ...upstreams.map((upstream) => `${worker}/${upstream}`));
  }

  /** Every live worker's view of its upstreams, by upstream then worker; entries of dead workers are dropped. */
  async upstreams(now = Date.now()): Promise<UpstreamStatus[]> {
    const all = await this.redis.hgetall(this.keys.gatewayUpstreams());
    const live: UpstreamStatus[] = [];
    const stale: string[] = [];
    for (const [field, json] of Object.entries(all)) {
      const status = parseStatus(json);
      if (status && status.at + status.validMs >= now) live.push(status);
      else stale.push(field);
    }
    if (stale.length > 0) await this.redis.hdel(this.keys.gatewayUpstreams(), ...stale).catch(() => undefined);
    return live.sort((a, b) => a.upstream.localeCompare(b.upstream) || a.worker.localeCompare(b.worker));
  }

  /** The value of a gateway key (a lease's holder, a shared session). */
  async read(key: string): Promise<string | undefined> {
    return (await this.redis.get(key)) ?? undefined;
  }

  /**
   * Sets `key` to `value` for `ttlMs` (without `value`: deletes it) if it holds `expected` (absent: if it does not
   * exist); otherwise answers what it holds.
   */
  swap(
    key: string,
    expected: string | undefined,
    value: string | undefined,
    ttlMs = 0,
  ): Promise<{ done: true } | { done: false; current: string | undefined }> {
    return this.#scripts.compareAndSet({
      keys: { key },
      ...(expected !== undefined ? { expected } : {}),
      ...(value !== undefined ? { value, ttlMs } : {}),
    });
  }
}

function parseStatus(json: string): UpstreamStatus | undefined {
  try {
    const value = JSON.parse(json) as Partial<UpstreamStatus>;
    return typeof value.at === 'number' && typeof value.validMs === 'number' && typeof value.upstream === 'string'
      ? (value as UpstreamStatus)
      : undefined;
  } catch {
    return undefined;
  }
}
