// The tools of a worker's upstream MCP servers, as tools of our own: each listed upstream tool (allowed, renamed with
// the upstream's prefix) becomes a definition the worker runs and a catalog entry with the upstream's own schemas.
// Each upstream is reached on its own (one that hangs or is down delays no other); the set follows the upstreams:
// their notifications/tools/list_changed, and their restarts. A tool seen once stays listed while its upstream is
// unavailable: a call then says why (docs/gateway.md).
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayState, KeySpace, Logger, UpstreamStatus } from '@mcp-tasks/engine';
import {
  TaskSupport,
  toolQueueName,
  type Admission,
  type CatalogEntry,
  type ToolContext,
  type ToolDefinition,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { OwnerLease } from './affinity.ts';
import { callUpstreamTool } from './call.ts';
import { isResendable, isToolAllowed, type UpstreamConfig } from './config.ts';
import type { UpstreamConnection } from './connection.ts';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, UpstreamPool } from './pool.ts';
import { upstreamText } from './redact.ts';

/** A tool whose catalog entry is given, not derived from a zod schema (its schemas come from elsewhere). */
export interface PublishedTool {
  definition: ToolDefinition;
  entry: CatalogEntry;
  /** False while another worker runs this upstream's calls (a stateful stdio upstream): listed, but no jobs taken. */
  runsHere?: boolean;
  /** The upstream MCP server it comes from: its publisher in the catalog, with its own share of it. */
  upstream?: string;
}

export interface UpstreamToolsOptions {
  /** This worker's name: it holds leases and reports under it. */
  worker: string;
  /** Redis, for affinity across workers and for operators' views; absent: neither. */
  shared?: { gateway: GatewayState; keys: KeySpace };
  /** How often the upstreams' state is reported (the catalog heartbeat). */
  heartbeatMs: number;
  /**
   * The catalog's admission (the schema budget's: every reader judges an entry the same way). A tool it refuses is
   * left out and shown to operators; absent: every tool is published.
   */
  admit?: (entry: CatalogEntry) => Promise<Admission>;
}

/** An upstream tool left out at publish: beyond the upstream's `maxTools`, or refused by the catalog's admission. */
export interface LeftOutTool {
  tool: string;
  reason: string;
}

/** Operators see at most this many left-out tools per upstream (and their count). */
const LEFT_OUT_SHOWN = 20;

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** The api validates arguments against the upstream's JSON Schema, and the upstream validates them again. */
const UpstreamArguments = z.record(z.string(), z.unknown());

interface Served {
  pool: UpstreamPool;
  /** The last listing (kept while the upstream is unavailable); undefined until the first one. */
  tools?: PublishedTool[];
  /** The tools of the last listing left out, and why; each told to the log once (`tool\nreason` in `told`). */
  leftOut: LeftOutTool[];
  told: Set<string>;
  /** Set for a stateful stdio upstream: the lease of the one worker that runs its calls. */
  lease?: OwnerLease;
}

export class UpstreamTools {
  readonly #served: Served[];
  readonly #refreshing = new Map<UpstreamPool, Promise<void>>();
  readonly #again = new Set<UpstreamPool>();
  readonly #listeners = new Set<() => void>();
  #reporter: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(
    upstreams: readonly UpstreamConfig[],
    private readonly log: Logger,
    private readonly options: UpstreamToolsOptions,
  ) {
    this.#served = upstreams.map((upstream) => {
      const pool = new UpstreamPool(upstream, {
        log,
        ...(options.shared ? { shared: options.shared } : {}),
        onToolsChanged: (changed) => {
          // Before the first listing, the start-up loop lists.
          if (this.#servedOf(changed).tools !== undefined) void this.#refresh(changed);
        },
        onState: () => this.#report(),
      });
      return { pool, leftOut: [], told: new Set<string>() };
    });
  }

  /**
   * Reaches every upstream on its own, in the background: the tools of each are published as soon as it is listed,
   * and one that hangs or is down is retried with backoff without holding up the others or the worker.
   */
  static async start(
    upstreams: readonly UpstreamConfig[],
    log: Logger,
    options: UpstreamToolsOptions,
  ): Promise<UpstreamTools> {
    const tools = new UpstreamTools(upstreams, log, options);
    await Promise.all(tools.#served.map((served) => tools.#startLease(served)));
    for (const served of tools.#served) void tools.#listUntilListed(served.pool);
    tools.#reporter = setInterval(() => tools.#report(), options.heartbeatMs);
    tools.#reporter.unref();
    return tools;
  }

  /** The tools of every upstream now, in upstream order; a name an earlier upstream has is left out. */
  current(): PublishedTool[] {
    const byName = new Map<string, PublishedTool>();
    for (const served of this.#served) {
      const runsHere = served.lease?.held ?? true;
      for (const tool of served.tools ?? []) {
        if (byName.has(tool.entry.name)) {
          this.log.warn('upstream tool left out: an earlier upstream has a tool of that name', {
            upstream: served.pool.upstream.name,
            tool: tool.entry.name,
          });
          continue;
        }
        byName.set(tool.entry.name, { ...tool, runsHere });
      }
    }
    return [...byName.values()];
  }

  /** How this worker sees each upstream, for operators. */
  statuses(now = Date.now()): UpstreamStatus[] {
    return this.#served.map(({ pool, tools, lease, leftOut }) => {
      const { upstream } = pool;
      const status = pool.status();
      const standby = lease !== undefined && !lease.held;
      return {
        worker: this.options.worker,
        upstream: upstream.name,
        transport: upstream.url !== undefined ? 'http' : 'stdio',
        affinity: upstream.affinity,
        ...status,
        state: standby && status.connections === 0 ? 'standby' : status.state,
        tools: tools?.length ?? 0,
        ...(leftOut.length > 0 ? { refused: leftOut.length, refusedTools: leftOut.slice(0, LEFT_OUT_SHOWN) } : {}),
        at: now,
        validMs: this.options.heartbeatMs * 3,
      };
    });
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    clearInterval(this.#reporter);
    await Promise.all(this.#served.map((served) => served.lease?.stop() ?? Promise.resolve()));
    const gateway = this.options.shared?.gateway;
    const names = this.#served.map(({ pool }) => pool.upstream.name);
    await gateway?.withdraw(this.options.worker, names).catch(() => undefined);
    await Promise.all(this.#served.map(({ pool }) => pool.close()));
  }

  #servedOf(pool: UpstreamPool): Served {
    return this.#served.find((served) => served.pool === pool) as Served;
  }

  /** A stateful stdio upstream runs on one worker at a time (docs/gateway.md, "Affinity"): its lease. */
  async #startLease(served: Served): Promise<void> {
    const { upstream } = served.pool;
    const shared = this.options.shared;
    if (!shared || upstream.affinity === 'stateless' || upstream.command === undefined) return;
    served.lease = new OwnerLease(
      shared.gateway,
      shared.keys.gatewayOwner(upstream.name),
      this.options.worker,
      upstream.ownerLeaseMs,
      this.log,
      (held) => {
        this.log.info(held ? 'upstream calls run here' : 'upstream calls run on another worker', {
          upstream: upstream.name,
        });
        this.#report();
        this.#changed();
      },
    );
    await served.lease.start();
  }

  /** The first listing, tried until it succeeds, further apart each time (the pool's backoff). */
  async #listUntilListed(pool: UpstreamPool): Promise<void> {
    const { upstream } = pool;
    for (let attempt = 1; !this.#closed; attempt++) {
      try {
        await this.#list(pool, await pool.listingConnection());
        return;
      } catch (error) {
        if (this.#closed) return;
        // The pool's backoff when connecting failed; the same when the listing did.
        const inMs = Math.max(pool.retryAt - Date.now(), Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (attempt - 1)));
        const fields = { upstream: upstream.name, error: upstreamText(upstream, (error as Error).message) };
        if (attempt === 1) this.log.error('upstream not reachable; retrying', fields);
        this.log.info('restarting upstream connection', { ...fields, inMs });
        await new Promise((resolve) => setTimeout(resolve, inMs).unref());
      }
    }
  }

  /** Lists the upstream's tools again; calls meanwhile are served by one more listing after this one. */
  #refresh(pool: UpstreamPool): Promise<void> {
    const running = this.#refreshing.get(pool);
    if (running) {
      this.#again.add(pool);
      return running;
    }
    const listing = pool
      .listingConnection()
      .then((connection) => this.#list(pool, connection))
      .catch((error: unknown) => {
        // The previous listing stays: the tools are still served, and the next list_changed or restart lists again.
        this.log.warn('upstream tools not listed', {
          upstream: pool.upstream.name,
          error: upstreamText(pool.upstream, (error as Error).message),
        });
      })
      .finally(() => {
        this.#refreshing.delete(pool);
        if (this.#again.delete(pool)) void this.#refresh(pool);
      });
    this.#refreshing.set(pool, listing);
    return listing;
  }

  async #list(pool: UpstreamPool, connection: UpstreamConnection): Promise<void> {
    const { upstream } = pool;
    const listed = await connection.listTools();
    const asTasks = pool.runsToolTasks(connection);
    const served = this.#servedOf(pool);
    const overQuota: LeftOutTool[] = [];
    const refused: LeftOutTool[] = [];
    const publishable = listed.flatMap((tool) => this.#publishable(pool, tool, asTasks));
    const tools = await this.#admitted(withinQuota(publishable, upstream.maxTools, overQuota), refused);
    if (this.#closed) return;
    // Refusals first: each is the upstream's to fix; beyond its quota, the excess is its own choice of names.
    this.#tell(served, [...refused, ...overQuota]);
    served.tools = tools;
    this.log.info('upstream tools listed', { upstream: upstream.name, tools: tools.map((tool) => tool.entry.name) });
    this.#report();
    this.#changed();
  }

  /**
   * The tools the catalog's admission admits (as every reader would: docs/catalog.md, "Budgets"). Its verdicts are
   * kept by content, so a relisting (list_changed, a reconnect) judges and compiles nothing that did not change.
   */
  async #admitted(tools: readonly PublishedTool[], leftOut: LeftOutTool[]): Promise<PublishedTool[]> {
    const admit = this.options.admit;
    if (!admit) return [...tools];
    const admitted: PublishedTool[] = [];
    for (const tool of tools) {
      const admission = await admit(tool.entry);
      if (admission.ok) admitted.push(tool);
      else leftOut.push({ tool: tool.entry.name, reason: admission.reason });
    }
    return admitted;
  }

  /**
   * Logs each tool left out once (not at every relisting), naming its upstream: it is the publisher to fix. A flood
   * gets one line for all but the first few.
   */
  #tell(served: Served, leftOut: LeftOutTool[]): void {
    const upstream = served.pool.upstream.name;
    const fresh = leftOut.filter(({ tool, reason }) => !served.told.has(`${tool}\n${reason}`));
    for (const { tool, reason } of fresh.slice(0, LEFT_OUT_SHOWN)) {
      this.log.warn('upstream tool left out: the tool catalog would refuse it', { upstream, tool, reason });
    }
    if (fresh.length > LEFT_OUT_SHOWN) {
      this.log.warn('upstream tools left out', {
        upstream,
        more: fresh.length - LEFT_OUT_SHOWN,
        reason: fresh[LEFT_OUT_SHOWN]?.reason,
      });
    }
    served.told = new Set(leftOut.map(({ tool, reason }) => `${tool}\n${reason}`));
    served.leftOut = leftOut;
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Tells operators how each upstream is (best effort: the next beat tries again). */
  #report(): void {
    const gateway = this.options.shared?.gateway;
    if (!gateway || this.#closed) return;
    gateway.report(this.statuses()).catch((error: unknown) => {
      this.log.debug('upstream state not reported', { error: String(error) });
    });
  }

  #publishable(pool: UpstreamPool, tool: Tool, runsTasks: boolean): PublishedTool[] {
    const { upstream } = pool;
    if (!isToolAllowed(upstream, tool.name)) return [];
    const name = `${upstream.prefix}${tool.name}`;
    if (!TOOL_NAME.test(name)) {
      this.log.warn('upstream tool left out: its name is not a valid tool name here', {
        upstream: upstream.name,
        tool: name,
      });
      return [];
    }
    const upstreamSupport = tool.execution?.taskSupport ?? TaskSupport.Forbidden;
    // An upstream that runs the tool as a task of its own (it declares tasks for tools/call) is called task-augmented.
    const asTask = upstreamSupport !== TaskSupport.Forbidden && runsTasks;
    if (upstreamSupport === TaskSupport.Required && !asTask) {
      this.log.warn('upstream tool left out: it must be called as a task, but its server does not declare tasks', {
        upstream: upstream.name,
        tool: tool.name,
      });
      return [];
    }
    const taskSupport = upstream.taskSupport[tool.name] ?? TaskSupport.Optional;
    const description = tool.description ?? tool.title ?? tool.name;
    // Read-only or idempotent: a call cut off (by the upstream's crash, or our worker's) may run again.
    const resendable = isResendable(upstream, tool.name, tool.annotations);
    const called = { name: tool.name, resendable, asTask };
    const definition: ToolDefinition = {
      name,
      ...(tool.title !== undefined ? { title: tool.title } : {}),
      description,
      inputSchema: UpstreamArguments,
      taskSupport,
      retrySafe: resendable,
      run: (args: Record<string, unknown>, context: ToolContext) => callUpstreamTool(pool, called, args, context),
    };
    const entry: CatalogEntry = {
      name,
      ...(tool.title !== undefined ? { title: tool.title } : {}),
      description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
      ...(tool.annotations !== undefined ? { annotations: { ...tool.annotations } } : {}),
      taskSupport,
      retrySafe: resendable,
      queue: toolQueueName(name),
      external: false,
    };
    return [{ definition, entry, upstream: upstream.name }];
  }
}

/**
 * At most `maxTools` tools of one upstream, the first by name (docs/gateway.md): an upstream that lists thousands
 * leaves out its own excess, and cannot crowd other publishers out of the catalog (CATALOG_MAX_TOOLS).
 */
function withinQuota(tools: PublishedTool[], maxTools: number, leftOut: LeftOutTool[]): PublishedTool[] {
  if (tools.length <= maxTools) return tools;
  const sorted = [...tools].sort((a, b) => (a.entry.name < b.entry.name ? -1 : a.entry.name > b.entry.name ? 1 : 0));
  for (const tool of sorted.slice(maxTools)) {
    leftOut.push({
      tool: tool.entry.name,
      reason: `its upstream lists more than maxTools (${maxTools}) tools; the first ${maxTools} by name are published`,
    });
  }
  return sorted.slice(0, maxTools);
}
