// Catalog entries are untrusted input (docs/catalog.md, "Bounds" and "Budgets"; docs/security.md, "Trust
// boundaries"): any process that can write to Redis publishes them, in any language, and any upstream MCP server
// behind a gateway lists them. An entry is admitted only within bounds of size and depth, as a well-formed entry whose
// input schema is JSON Schema within the budgets of the cost model (schema-cost.ts) and compiles; checked where a
// worker publishes and again wherever one is read, so that no entry can crash or stall the processes that read it.
// This module holds the part that does not read the schema; the engine's schema budget (schema-budget.ts) judges and
// compiles the schema, on the event loop when it is small, else in a thread. Every check is iterative or bounded by
// the depth checked first: nothing here recurses on an entry's nesting before it is known to be shallow.
import { canonicalJson, catalogEntryOf, CatalogEntrySchema, type CatalogEntry } from './catalog.ts';
import type { Scheduling } from './scheduling.ts';
import { judgeArgumentsSchema, type SchemaBounds, type SchemaCost } from './schema-cost.ts';
import type { ToolDefinition } from './tool.ts';

export interface CatalogBounds extends SchemaBounds {
  /** The largest entry, as UTF-8 JSON (CATALOG_MAX_ENTRY_BYTES). */
  maxEntryBytes: number;
  /** The deepest nesting of objects and arrays in an entry, the entry itself being level 1 (CATALOG_MAX_DEPTH). */
  maxDepth: number;
  /** The most live tools a process reads; the rest are left out, each publisher's fair share kept (CATALOG_MAX_TOOLS). */
  maxTools: number;
  /** The most live tools read from one publisher (CATALOG_MAX_TOOLS_PER_PUBLISHER). */
  maxToolsPerPublisher: number;
}

export const DEFAULT_CATALOG_BOUNDS: Readonly<CatalogBounds> = Object.freeze({
  maxEntryBytes: 65_536,
  maxDepth: 64,
  maxTools: 1000,
  maxToolsPerPublisher: 500,
  maxSchemaPaths: 10_000,
  maxPatternSize: 20_000,
});

/**
 * An entry admitted, or refused with the reason. Of these functions' admissions, only ownCatalogEntry's has read the
 * schema; the schema budget's (engine) come with what validating against it costs.
 */
export type Admission =
  | { ok: true; entry: CatalogEntry; cost?: SchemaCost }
  /** `transient`: the refusal says nothing of the entry (a schema thread could not start): ask again later. */
  | { ok: false; reason: string; transient?: true };

/** A worker's own tool that cannot be published; the message names the tool and the bound or the fault. */
export class CatalogEntryError extends Error {
  override readonly name = 'CatalogEntryError';
  constructor(
    readonly tool: string,
    readonly reason: string,
  ) {
    super(`Tool '${tool}' cannot be published to the tool catalog: ${reason}`);
  }
}

/** An entry as read from the catalog: `raw` is the JSON published under the hash field `name`. */
export function admitPublishedEntry(name: string, raw: string, bounds: CatalogBounds): Admission {
  const bytes = raw.length > bounds.maxEntryBytes ? raw.length : Buffer.byteLength(raw);
  if (bytes > bounds.maxEntryBytes) return refused(entrySizeReason(bytes, bounds));
  if (jsonTextDepth(raw, bounds.maxDepth) > bounds.maxDepth) return refused(depthReason(bounds));
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return refused('it is not JSON');
  }
  const parsed = CatalogEntrySchema.safeParse(json);
  if (!parsed.success) return refused(shapeReason(parsed.error.issues));
  if (parsed.data.name !== name) {
    return refused(`it is published under the name '${name}' but names the tool '${parsed.data.name}'`);
  }
  return { ok: true, entry: parsed.data };
}

/** An entry a worker is about to publish (its own tool's, or an upstream server's): the same checks as at read. */
export function admitEntryToPublish(entry: CatalogEntry, bounds: CatalogBounds): Admission {
  if (valueDepth(entry, bounds.maxDepth) > bounds.maxDepth) return refused(depthReason(bounds));
  const bytes = Buffer.byteLength(canonicalJson(entry));
  if (bytes > bounds.maxEntryBytes) return refused(entrySizeReason(bytes, bounds));
  const parsed = CatalogEntrySchema.safeParse(entry);
  if (!parsed.success) return refused(shapeReason(parsed.error.issues));
  return { ok: true, entry };
}

/**
 * The entry a worker publishes for one of its own tools, or CatalogEntryError naming the tool: a zod schema too deep
 * to convert, an entry beyond the bounds or over the budgets. Whether its schema compiles is checked by the engine.
 */
export function ownCatalogEntry(tool: ToolDefinition, bounds: CatalogBounds, override?: Scheduling): CatalogEntry {
  let entry: CatalogEntry;
  try {
    entry = catalogEntryOf(tool, override);
  } catch (error) {
    const why =
      error instanceof RangeError
        ? `its schema is nested too deeply to convert to JSON Schema (the catalog allows CATALOG_MAX_DEPTH=${bounds.maxDepth} levels)`
        : `its schema cannot be converted to JSON Schema: ${(error as Error).message}`;
    throw new CatalogEntryError(tool.name, why);
  }
  const admission = admitEntryToPublish(entry, bounds);
  if (!admission.ok) throw new CatalogEntryError(tool.name, admission.reason);
  // The worker's own code, at its start: its schema is judged here, whatever its size.
  const judged = judgeArgumentsSchema(entry.inputSchema, bounds);
  if (!judged.ok) throw new CatalogEntryError(tool.name, judged.reason);
  return entry;
}

/** A live tool a process leaves out (docs/catalog.md, "Bounds"), and why. */
export interface LeftOut {
  tool: string;
  reason: string;
}

/**
 * Which live tools a process reads: at most CATALOG_MAX_TOOLS_PER_PUBLISHER of one publisher (the first by name), and
 * at most CATALOG_MAX_TOOLS in all, shared out fairly: publishers take one tool each in turn, so that a publisher over
 * its share loses its own excess, never another publisher's tools (one upstream listing a thousand tools whose names
 * sort first made every other tool uncallable). Every replica that reads the same catalog keeps the same tools.
 * `publisherOf` answers '' for a tool whose publisher is not recorded: those share one publisher.
 */
export function selectLiveTools(
  names: readonly string[],
  publisherOf: (tool: string) => string,
  bounds: Pick<CatalogBounds, 'maxTools' | 'maxToolsPerPublisher'>,
): { kept: string[]; leftOut: LeftOut[] } {
  const { maxTools, maxToolsPerPublisher: quota } = bounds;
  const sorted = [...names].sort();
  if (sorted.length <= Math.min(maxTools, quota)) return { kept: sorted, leftOut: [] };
  const byPublisher = new Map<string, string[]>();
  for (const tool of sorted) {
    const publisher = publisherOf(tool);
    let tools = byPublisher.get(publisher);
    if (!tools) byPublisher.set(publisher, (tools = []));
    tools.push(tool);
  }
  const leftOut: LeftOut[] = [];
  const shares = [...byPublisher].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [publisher, tools] of shares) {
    for (const tool of tools.splice(quota)) {
      leftOut.push({
        tool,
        reason:
          `its publisher ${publisher === '' ? '(unknown)' : `'${publisher}'`} publishes more than ` +
          `CATALOG_MAX_TOOLS_PER_PUBLISHER (${quota}) tools; its first ${quota} by name are read`,
      });
    }
  }
  const kept: string[] = [];
  for (let turn = 0; kept.length < maxTools; turn++) {
    const before = kept.length;
    for (const [, tools] of shares) {
      const tool = tools[turn];
      if (tool !== undefined && kept.length < maxTools) kept.push(tool);
    }
    if (kept.length === before) break;
  }
  const keptSet = new Set(kept);
  for (const [, tools] of shares) {
    for (const tool of tools) {
      if (keptSet.has(tool)) continue;
      leftOut.push({
        tool,
        reason:
          `more than CATALOG_MAX_TOOLS (${maxTools}) tools are live; each publisher keeps an equal share of them, ` +
          'its first by name',
      });
    }
  }
  return { kept: kept.sort(), leftOut };
}

function refused(reason: string): Admission {
  return { ok: false, reason };
}

/** Why an entry of `bytes` bytes is refused (also said where its size is known before it is fetched). */
export function entrySizeReason(bytes: number, bounds: CatalogBounds): string {
  return `it is ${bytes} bytes of JSON, more than CATALOG_MAX_ENTRY_BYTES (${bounds.maxEntryBytes})`;
}

function depthReason(bounds: CatalogBounds): string {
  return `it is nested more than CATALOG_MAX_DEPTH (${bounds.maxDepth}) levels deep`;
}

function shapeReason(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  const described = issues
    .slice(0, 3)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message));
  return `it is not a catalog entry (${described.join('; ')})`;
}

/**
 * The nesting depth of JSON text, counted without parsing it; stops counting once past `limit`. JSON.parse copes
 * with any depth, but whatever walks the parsed value next (zod, key sorting, ajv) recurses.
 */
export function jsonTextDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return deepest;
}

/** The nesting depth of a value (objects and arrays), walked iteratively; stops once past `limit`. */
export function valueDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}
