// The api's tools: the live catalog the workers publish (docs/catalog.md), cached in this replica, listed by
// tools/list and used to validate a call's arguments against the published JSON Schema. No tool code is loaded here.
// The catalog admits only entries within its bounds and budgets whose schema compiles (docs/catalog.md, "Bounds",
// "Budgets"), each with its own validator: the one implementation of schema validation (engine ArgumentValidator over
// protocol's), run on the event loop only when cheap, else in a schema thread.
import type { ArgumentValidator, CatalogView } from '@mcp-tasks/engine';
import { InvalidInputError, listingOfEntry, UnavailableError, type CatalogEntry } from '@mcp-tasks/protocol';

export class ApiTools {
  #listing: Record<string, unknown>[] | undefined;

  constructor(
    readonly view: CatalogView,
    /** The one validation of arguments against a published schema (the worker's child calls use it too). */
    private readonly validator: ArgumentValidator,
    /** CATALOG_EMPTY_WAIT_MS: how long a call waits for its tool while the catalog has none at all. */
    readonly emptyWaitMs = 0,
  ) {
    view.onChange(() => {
      this.#listing = undefined;
    });
  }

  /** tools/list: every live tool, by name; computed once per catalog change. */
  list(): Record<string, unknown>[] {
    this.#listing ??= [...this.view.entries().values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(listingOfEntry);
    return this.#listing;
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
