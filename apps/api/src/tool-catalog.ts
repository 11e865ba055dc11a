// The api's tools: the live catalog the workers publish (docs/catalog.md), cached in this replica, listed by
// tools/list and used to validate a call's arguments against the published JSON Schema. No tool code is loaded here.
// The catalog admits only entries within its bounds and budgets whose schema compiles (docs/catalog.md, "Bounds",
// "Budgets"), each with its own validator: the one implementation of schema validation (engine ArgumentValidator over
// protocol's), run on the event loop only when cheap, else in a schema thread.
import type { ArgumentValidator, CatalogView } from '@mcp-tasks/engine';
import {
  handleToolListing,
  InvalidInputError,
  listingOfEntry,
  TaskSupport,
  UnavailableError,
  type CatalogEntry,
  type HandleToolNames,
} from '@mcp-tasks/protocol';

/** Which tools a listing for clients with task handles shows as handed out (calls/handles.ts). */
export interface HandleListing {
  names: HandleToolNames;
  /** A tool that requires a task may be called plainly and handed out (2025-11-25): listed as optional. */
  requiredTools: boolean;
}

export class ApiTools {
  #listing: Record<string, unknown>[] | undefined;
  /** The listings for clients with task handles, by whether required tools are handed out too. */
  readonly #handleListings = new Map<boolean, Record<string, unknown>[]>();

  constructor(
    readonly view: CatalogView,
    /** The one validation of arguments against a published schema (the worker's child calls use it too). */
    private readonly validator: ArgumentValidator,
    /** CATALOG_EMPTY_WAIT_MS: how long a call waits for its tool while the catalog has none at all. */
    readonly emptyWaitMs = 0,
  ) {
    view.onChange(() => {
      this.#listing = undefined;
      this.#handleListings.clear();
    });
  }

  /** tools/list: every live tool, by name; computed once per catalog change. */
  list(): Record<string, unknown>[] {
    this.#listing ??= [...this.view.entries().values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(listingOfEntry);
    return this.#listing;
  }

  /**
   * tools/list for clients that get task handles (docs/clients.md): the catalog's tools as such a client may call them,
   * and the handle tools. A tool that may be handed out lists no outputSchema (its answer may be a handle, which a
   * client validating structuredContent against it would refuse) and, when required tools are handed out too, is
   * listed optional (such a client may call it plainly). The handle tools' names are the server's while handles are
   * on: a catalog tool of the same name is not listed (TASK_HANDLE_TOOL_PREFIX moves them aside). Computed once per
   * catalog change.
   */
  listWithHandles(handles: HandleListing): Record<string, unknown>[] {
    let listing = this.#handleListings.get(handles.requiredTools);
    if (listing) return listing;
    const handedOut = (entry: CatalogEntry) =>
      entry.taskSupport === TaskSupport.Optional ||
      (handles.requiredTools && entry.taskSupport === TaskSupport.Required);
    const catalog = this.list()
      .filter((tool) => !handles.names.has(String(tool['name'])))
      .map((tool) => {
        const entry = this.view.entries().get(String(tool['name']));
        if (!entry || !handedOut(entry)) return tool;
        const { outputSchema: _dropped, ...rest } = tool;
        return { ...rest, execution: { taskSupport: TaskSupport.Optional } };
      });
    listing = [...catalog, ...handleToolListing(handles.names)].sort((a, b) =>
      String(a['name']) < String(b['name']) ? -1 : String(a['name']) > String(b['name']) ? 1 : 0,
    );
    this.#handleListings.set(handles.requiredTools, listing);
    return listing;
  }

  names(): string[] {
    return [...this.view.entries().keys()];
  }

  /**
   * The tool's entry; InvalidInputError naming an unknown tool (-32602 on the wire, the MCP convention), or
   * UnavailableError naming a tool whose entry the catalog refused, and why: the fault is its publisher's.
   */
  async get(name: string): Promise<CatalogEntry> {
    // A refused entry is known without reading Redis again: its fix is announced on the catalog's channel.
    const entry = this.view.refusal(name) ? undefined : await this.view.get(name);
    if (entry) return entry;
    if (!this.view.loaded) {
      throw new UnavailableError(
        `Tool '${name}' cannot be looked up: the tool catalog has not been read yet; try again`,
      );
    }
    // A system starting: the api is ready before any worker has published. An empty catalog is never the answer.
    if (this.view.entries().size === 0 && !this.view.refusal(name)) {
      const arrived = await this.view.waitFor(name, this.emptyWaitMs);
      if (arrived) return arrived;
    }
    const refusal = this.view.refusal(name);
    if (refusal) {
      throw new UnavailableError(
        `Tool '${name}' cannot be called: its catalog entry is refused (${refusal.reason}); its publisher must fix it`,
      );
    }
    throw new InvalidInputError(`Unknown tool: '${name}'`);
  }

  /**
   * Validated arguments with the schema's defaults applied, or InvalidInputError saying which argument is wrong, or
   * that validating them exceeded its budget. `bytes`: their size as JSON.
   */
  parseArguments(entry: CatalogEntry, args: unknown, bytes?: number): Promise<unknown> {
    return this.validator.parse(entry, args, bytes);
  }
}
