// The tools one worker serves right now: its own (MCPT_TOOLS, fixed) and those of its upstream MCP servers, which
// come and go as the upstreams list them. The processor looks tools up here; the catalog gets `entries()`.
import type { SchemaBudget } from '@mcp-tasks/engine';
import {
  CatalogEntryError,
  DEFAULT_CATALOG_BOUNDS,
  ownCatalogEntry,
  ToolRegistry,
  type CatalogBounds,
  type CatalogEntry,
  type Scheduling,
  type ToolDefinition,
} from '@mcp-tasks/protocol';
import type { PublishedTool } from './upstream/upstream-tools.ts';

export interface ServedToolsOptions {
  /** The operator's scheduling override of an own tool (docs/scheduling.md). */
  override?: (tool: string) => Scheduling | undefined;
  /** The catalog's bounds (CATALOG_MAX_*); the defaults when absent. */
  bounds?: CatalogBounds;
}

export class ServedTools {
  #registry: ToolRegistry;
  #entries: CatalogEntry[] = [];
  /** Upstream tools listed here whose jobs another worker takes (docs/gateway.md, "Affinity"). */
  #notRunHere: ReadonlySet<string> = new Set();
  /** The upstream of each upstream tool served. */
  #upstreams: ReadonlyMap<string, string> = new Map();
  readonly #own: readonly PublishedTool[];
  readonly #ownNames: ReadonlySet<string>;

  /**
   * Throws CatalogEntryError naming an own tool whose entry is beyond the catalog's `bounds` or over the budgets of
   * its cost model: every reader of the catalog would refuse it (docs/catalog.md, "Bounds"). That its schema compiles
   * within its budget is checked by checkOwn.
   */
  constructor(own: readonly ToolDefinition[], options: ServedToolsOptions = {}) {
    const bounds = options.bounds ?? DEFAULT_CATALOG_BOUNDS;
    this.#own = own.map((definition) => ({
      definition,
      entry: ownCatalogEntry(definition, bounds, options.override?.(definition.name)),
    }));
    this.#ownNames = new Set(own.map((tool) => tool.name));
    this.#registry = new ToolRegistry(own);
    this.#entries = this.#own.map((tool) => tool.entry);
  }

  /**
   * Throws CatalogEntryError naming an own tool whose schema does not compile, or not within its budget: every reader
   * of the catalog would refuse it (docs/catalog.md, "Budgets").
   */
  async checkOwn(schemas: Pick<SchemaBudget, 'admit'>): Promise<void> {
    for (const { entry } of this.#own) {
      const admission = await schemas.admit(entry);
      if (!admission.ok) throw new CatalogEntryError(entry.name, admission.reason);
    }
  }

  /**
   * Serves `upstream` (admitted by the catalog's admission: UpstreamTools) besides the worker's own tools, except the
   * names in `withheld` (refused by the catalog). An upstream tool named like one of the worker's own tools is left
   * out: the own tool wins.
   */
  update(upstream: readonly PublishedTool[], withheld: ReadonlySet<string> = new Set()): void {
    const served = [
      ...this.#own,
      ...upstream.filter((tool) => !this.#ownNames.has(tool.entry.name) && !withheld.has(tool.entry.name)),
    ];
    this.#registry = new ToolRegistry(served.map((tool) => tool.definition));
    this.#entries = served.map((tool) => tool.entry);
    this.#notRunHere = new Set(served.filter((tool) => tool.runsHere === false).map((tool) => tool.entry.name));
    this.#upstreams = new Map(
      served.flatMap((tool) => (tool.upstream !== undefined ? [[tool.entry.name, tool.upstream] as const] : [])),
    );
  }

  /** The upstream MCP server a served tool comes from; undefined for an own tool. */
  upstreamOf(name: string): string | undefined {
    return this.#upstreams.get(name);
  }

  isOwn(name: string): boolean {
    return this.#ownNames.has(name);
  }

  entries(): readonly CatalogEntry[] {
    return this.#entries;
  }

  /**
   * The entries whose jobs this worker runs: all but the tools of external queue consumers, and those of an upstream
   * whose calls another worker runs.
   */
  entriesRunHere(): CatalogEntry[] {
    return this.#entries.filter((entry) => !entry.external && !this.#notRunHere.has(entry.name));
  }

  /** The tool queues this worker runs. */
  queuesRunHere(): string[] {
    return this.entriesRunHere().map((entry) => entry.queue);
  }

  names(): string[] {
    return this.#registry.names();
  }

  /** The tool, or -32602 naming the unknown tool. */
  get(name: string): ToolDefinition {
    return this.#registry.get(name);
  }

  parseArguments(tool: ToolDefinition, args: unknown): unknown {
    return this.#registry.parseArguments(tool, args);
  }
}
