// What validating arguments against a published schema can cost, read from the schema before anything compiles it
// (docs/catalog.md, "Budgets"): a schema is untrusted input, and its shape (size, depth) bounds neither the paths an
// argument takes through `$ref`/`anyOf`/`oneOf` (1.5 KB of refs: 2^22 paths, seconds per call) nor RE2's work, which
// is linear in the text but multiplied by the program's size. Admission refuses what is over budget; what is cheap
// compiles and validates on the event loop, the rest in a thread with a deadline (engine: schema-budget.ts).
import { patternSizeBound } from './linear-pattern.ts';
import type { SchemaGraph } from './schema-refs.ts';
import { checkArgumentsSchema, SchemaError } from './schema-validation.ts';

/** How deep arguments can be: a request is nested at most 64 levels (apps/api transport/body.ts), arguments less. */
export const MAX_ARGUMENTS_DEPTH = 64;

export interface SchemaCost {
  /**
   * The most subschemas applied to one value of any arguments: every path through `$ref`, `anyOf`, `oneOf`, `allOf`,
   * `not`, `if` ... that reaches it, down to MAX_ARGUMENTS_DEPTH. A plain object of properties costs 1.
   */
  paths: number;
  /** The most RE2 instructions run per character of one value of any arguments (the patterns on every path). */
  patternWork: number;
  /** The RE2 instructions of the schema's distinct patterns, summed: what compiling and keeping them costs. */
  patternSize: number;
  /** The schema's size in bytes of JSON. */
  bytes: number;
}

/**
 * The cost of a schema whose refs were checked (checkSchemaRefs: its in-place edges have no loop). For each subschema
 * and each depth d, the most subschemas it applies to one value d levels below the one it is applied to: its in-place
 * subschemas' at the same depth, plus, for the one key or item that costs most, its descending subschemas' at d - 1.
 * A sum of maxima bounds the maximum of sums, so the figure is never below what a validator does; it is computed in
 * time linear in the schema for each depth.
 */
export function schemaCost(graph: SchemaGraph, bytes: number): SchemaCost {
  const { order, inPlace, descending } = graph;
  const index = new Map(order.map((schema, i) => [schema, i]));
  const at = (schemas: readonly Record<string, unknown>[] | undefined) =>
    (schemas ?? []).map((schema) => index.get(schema) as number);
  const inPlaceOf = order.map((schema) => at(inPlace.get(schema)));
  const anyKey = order.map((schema) => at(descending.get(schema)?.get('*')));
  const byName = order.map((schema) =>
    [...(descending.get(schema) ?? new Map<string, readonly Record<string, unknown>[]>())]
      .filter(([key]) => key !== '*')
      .map(([, schemas]) => at(schemas)),
  );
  const sizes = new Map<string, number>();
  const sizeOf = (pattern: string) => {
    let size = sizes.get(pattern);
    if (size === undefined) sizes.set(pattern, (size = patternSizeBound(pattern)));
    return size;
  };
  // A value is tested against the node's `pattern`; its keys against each of `patternProperties`.
  const ownWork = order.map((schema) => {
    let work = typeof schema['pattern'] === 'string' ? sizeOf(schema['pattern']) : 0;
    const patterns = schema['patternProperties'];
    if (patterns !== null && typeof patterns === 'object') for (const key of Object.keys(patterns)) work += sizeOf(key);
    return work;
  });
  const root = index.get(graph.root) as number;
  const sum = (values: Float64Array, nodes: readonly number[]) => nodes.reduce((total, i) => total + values[i]!, 0);
  let previous = { paths: new Float64Array(order.length), work: new Float64Array(order.length) };
  let paths = 0;
  let patternWork = 0;
  for (let depth = 0; depth <= MAX_ARGUMENTS_DEPTH; depth++) {
    const current = { paths: new Float64Array(order.length), work: new Float64Array(order.length) };
    let reached = false;
    for (let i = 0; i < order.length; i++) {
      let nodePaths = (depth === 0 ? 1 : 0) + sum(current.paths, inPlaceOf[i]!);
      let nodeWork = (depth === 0 ? ownWork[i]! : 0) + sum(current.work, inPlaceOf[i]!);
      if (depth > 0) {
        const anyPaths = sum(previous.paths, anyKey[i]!);
        const anyWork = sum(previous.work, anyKey[i]!);
        let namedPaths = 0;
        let namedWork = 0;
        for (const named of byName[i]!) {
          namedPaths = Math.max(namedPaths, sum(previous.paths, named));
          namedWork = Math.max(namedWork, sum(previous.work, named));
        }
        nodePaths += anyPaths + namedPaths;
        nodeWork += anyWork + namedWork;
      }
      current.paths[i] = nodePaths;
      current.work[i] = nodeWork;
      if (nodePaths > 0) reached = true;
    }
    paths = Math.max(paths, current.paths[root]!);
    patternWork = Math.max(patternWork, current.work[root]!);
    if (!reached) break;
    previous = current;
  }
  const patternSize = [...sizes.values()].reduce((total, size) => total + size, 0);
  return { paths, patternWork, patternSize, bytes };
}

/** The budgets of the cost model (docs/catalog.md, "Budgets"; part of the catalog's bounds). */
export interface SchemaBounds {
  /** The most subschemas applied to one value of the arguments (SchemaCost.paths; CATALOG_MAX_SCHEMA_PATHS). */
  maxSchemaPaths: number;
  /** The most RE2 instructions of an entry's patterns, summed (SchemaCost.patternSize; CATALOG_MAX_PATTERN_SIZE). */
  maxPatternSize: number;
}

/**
 * A published input schema judged without compiling it: its cost, or why it is refused (not JSON Schema, a `$ref`
 * that does not resolve or loops, or over a budget). Patterns are weighed from their text. Call it on a schema whose
 * depth is bounded (the catalog's bounds).
 */
export function judgeArgumentsSchema(
  schema: Record<string, unknown>,
  bounds: SchemaBounds,
): { ok: true; cost: SchemaCost } | { ok: false; reason: string } {
  let cost: SchemaCost;
  try {
    cost = schemaCost(checkArgumentsSchema(schema), JSON.stringify(schema).length);
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    return { ok: false, reason: `its inputSchema cannot be used: ${error.message}` };
  }
  const over = overBudget(cost, bounds);
  return over === undefined ? { ok: true, cost } : { ok: false, reason: over };
}

/** Why a schema of this cost is over a budget of the cost model, if it is. */
export function overBudget(cost: SchemaCost, bounds: SchemaBounds): string | undefined {
  if (cost.paths > bounds.maxSchemaPaths) {
    return (
      `its inputSchema is over budget: up to ${costFigure(cost.paths)} subschemas apply to one value of the ` +
      `arguments through $ref, $dynamicRef, anyOf, oneOf, allOf, not and if, more than CATALOG_MAX_SCHEMA_PATHS ` +
      `(${bounds.maxSchemaPaths})`
    );
  }
  if (cost.patternSize > bounds.maxPatternSize) {
    return (
      `its inputSchema is over budget: its patterns compile to up to ${costFigure(cost.patternSize)} RE2 ` +
      `instructions, more than CATALOG_MAX_PATTERN_SIZE (${bounds.maxPatternSize})`
    );
  }
  return undefined;
}

/** A figure of a cost for a message: exact while it is, `1.8e+19` beyond. */
export function costFigure(value: number): string {
  return value < 1e15 ? String(Math.round(value)) : value.toExponential(1);
}
