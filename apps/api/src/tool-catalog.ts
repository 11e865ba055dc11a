// The api's tools: the live catalog the workers publish (docs/catalog.md), cached in this replica, listed by
// tools/list and used to validate a call's arguments against the published JSON Schema. No tool code is loaded here.
import { ArgumentValidator, type CatalogView } from '@mcp-tasks/engine';
import { InvalidInputError, listingOfEntry, type CatalogEntry } from '@mcp-tasks/protocol';

export class ApiTools {
  /** The engine's one validation of arguments against a published schema (the worker's child calls use it too). */
  readonly #arguments = new ArgumentValidator();
  #listing: Record<string, unknown>[] | undefined;

  constructor(readonly view: CatalogView) {
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

  /** The tool's entry, or InvalidInputError naming the unknown tool (-32602 on the wire, the MCP convention). */
  async get(name: string): Promise<CatalogEntry> {
    const entry = await this.view.get(name);
    if (!entry) throw new InvalidInputError(`Unknown tool: '${name}'`);
    return entry;
  }

  /** Validated arguments with the schema's defaults applied, or InvalidInputError saying which argument is wrong. */
  parseArguments(entry: CatalogEntry, args: unknown): unknown {
    return this.#arguments.parse(entry, args);
  }
}
