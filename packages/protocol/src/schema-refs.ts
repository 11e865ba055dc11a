// The `$ref`s of a published JSON Schema, checked before ajv sees it: a ref must resolve inside the schema (nothing
// is fetched), and no chain of refs and in-place applicators (allOf, anyOf, not, if, ...) may lead back to where it
// started without descending into the arguments. Such a loop makes ajv's compiler or its validator recurse until the
// stack overflows (docs/catalog.md, "Schema validation"). A `$dynamicRef` may resolve, at run time, to any schema of
// the same `$dynamicAnchor`: each is an edge here, so that a loop only the dynamic scope closes is refused too. The
// graph this builds is what the cost model reads (schema-cost.ts). The walk is iterative: a schema is untrusted input.

/** Keywords whose subschemas apply to a part of the instance (its items, properties, keys): they descend. */
const ONE_SCHEMA = [
  'additionalProperties',
  'additionalItems',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
  'items',
] as const;
const SCHEMA_LISTS = ['prefixItems', 'items'] as const;
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'] as const;
/** Not applied to anything: subschemas only refs reach. */
const DEFINITIONS = new Set(['$defs', 'definitions']);
/** Applied to the same instance as the schema that holds them: a cycle through these consumes nothing. */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAPS = ['dependentSchemas', 'dependencies'] as const;

/** The base URI of a schema without `$id`: refs resolve against it like a document's own URL. */
const DOCUMENT = 'schema:/root';

type Schema = Record<string, unknown>;

export interface SchemaNode {
  schema: Schema;
  /** Its JSON pointer from the root, for messages. */
  path: string;
  /** The URI its relative refs resolve against. */
  base: string;
}

export class SchemaRefError extends Error {
  override readonly name = 'SchemaRefError';
}

/** A schema's subschemas and how each applies: the input of the cost model (schema-cost.ts). */
export interface SchemaGraph {
  root: Schema;
  /** Every subschema the validator may apply, those only refs reach included. */
  nodes: readonly SchemaNode[];
  /** Applied to the same part of the arguments as their schema: in-place keywords, `$ref`, `$dynamicRef`'s targets. */
  inPlace: ReadonlyMap<Schema, readonly Schema[]>;
  /**
   * Applied to a part of the arguments: `p:<name>` for the property `name` only, `*` for any key or item (additional
   * and pattern properties, items, contains, property names, ...).
   */
  descending: ReadonlyMap<Schema, ReadonlyMap<string, readonly Schema[]>>;
  /** The nodes in an order where every in-place target comes before the schemas that apply it. */
  order: readonly Schema[];
}

/** The schema's graph; throws SchemaRefError naming the first unresolvable `$ref` or the first loop. */
export function checkSchemaRefs(root: Schema): SchemaGraph {
  const nodes = collectNodes(root, '', DOCUMENT);
  const known = new Set(nodes.map((node) => node.schema));
  const resources = new Map<string, Schema>();
  const anchors = new Map<string, Schema>();
  const dynamicAnchors = new Map<string, Schema[]>();
  for (const node of nodes) {
    const dynamic = node.schema['$dynamicAnchor'];
    if (typeof dynamic === 'string') listAt(dynamicAnchors, dynamic).push(node.schema);
    if (typeof node.schema['$id'] === 'string' || node.schema === root) {
      resources.set(withoutFragment(node.base), node.schema);
    }
    for (const keyword of ['$anchor', '$dynamicAnchor']) {
      const anchor = node.schema[keyword];
      if (typeof anchor === 'string') anchors.set(`${withoutFragment(node.base)}#${anchor}`, node.schema);
    }
  }
  const edges = new Map<Schema, Schema[]>();
  const pending = [...nodes];
  while (pending.length > 0) {
    const node = pending.pop() as SchemaNode;
    const targets = inPlaceChildren(node.schema);
    for (const keyword of ['$ref', '$dynamicRef']) {
      const ref = node.schema[keyword];
      if (typeof ref !== 'string') continue;
      const target = resolveRef(ref, node, resources, anchors);
      targets.push(target.schema);
      if (keyword === '$dynamicRef') {
        targets.push(...dynamicTargets(ref, dynamicAnchors).filter((schema) => schema !== target.schema));
      }
      // A ref may point where no keyword we know of leads (under an unknown keyword): ajv compiles it all the same.
      if (!known.has(target.schema)) {
        const reached = collectNodes(target.schema, target.path, target.base).filter((n) => !known.has(n.schema));
        for (const n of reached) known.add(n.schema);
        nodes.push(...reached);
        pending.push(...reached);
      }
    }
    edges.set(node.schema, targets);
  }
  const search = findCycle(nodes, edges);
  if ('loop' in search) {
    throw new SchemaRefError(
      `a $ref loop at ${search.loop.path || '/'}: it leads back to itself through $ref, $dynamicRef and in-place ` +
        'keywords (allOf, anyOf, oneOf, not, if/then/else) without descending into the arguments',
    );
  }
  const descending = new Map(nodes.map((node) => [node.schema, descendingChildren(node.schema)]));
  return { root, nodes, inPlace: edges, descending, order: search.order };
}

/**
 * Every schema a `$dynamicRef` to `#name` may reach at run time (any `$dynamicAnchor: name` of the dynamic scope),
 * whatever its resource: more than the validator will follow, never less.
 */
function dynamicTargets(ref: string, dynamicAnchors: ReadonlyMap<string, Schema[]>): Schema[] {
  const hash = ref.indexOf('#');
  if (hash === -1) return [];
  let name: string;
  try {
    name = decodeURIComponent(ref.slice(hash + 1));
  } catch {
    return [];
  }
  return dynamicAnchors.get(name) ?? [];
}

function descendingChildren(schema: Schema): Map<string, Schema[]> {
  const children = new Map<string, Schema[]>();
  const add = (key: string, value: unknown) => {
    if (isSchema(value)) listAt(children, key).push(value);
  };
  for (const keyword of ONE_SCHEMA) add('*', schema[keyword]);
  for (const keyword of SCHEMA_LISTS) {
    const list = schema[keyword];
    if (Array.isArray(list)) for (const item of list) add('*', item);
  }
  for (const keyword of SCHEMA_MAPS) {
    const map = schema[keyword];
    if (DEFINITIONS.has(keyword) || !isSchema(map)) continue;
    for (const [name, item] of Object.entries(map)) add(keyword === 'properties' ? `p:${name}` : '*', item);
  }
  return children;
}

function collectNodes(root: Schema, path: string, parentBase: string): SchemaNode[] {
  const nodes: SchemaNode[] = [];
  const stack: SchemaNode[] = [{ schema: root, path, base: baseOf(root, parentBase, path) }];
  while (stack.length > 0) {
    const node = stack.pop() as SchemaNode;
    nodes.push(node);
    for (const [key, child] of childSchemas(node.schema)) {
      const path = `${node.path}/${key}`;
      stack.push({ schema: child, path, base: baseOf(child, node.base, path) });
    }
  }
  return nodes;
}

function baseOf(schema: Schema, parentBase: string, path: string): string {
  const id = schema['$id'];
  if (typeof id !== 'string') return parentBase;
  try {
    return new URL(id, parentBase).href;
  } catch {
    throw new SchemaRefError(`an $id that is not a URI reference at ${path || '/'}: ${JSON.stringify(id)}`);
  }
}

/** Every subschema with the pointer segments that lead to it. */
function childSchemas(schema: Schema): [string, Schema][] {
  const children: [string, Schema][] = [];
  const add = (key: string, value: unknown) => {
    if (isSchema(value)) children.push([key, value]);
  };
  for (const keyword of [...ONE_SCHEMA, ...IN_PLACE_ONE]) add(keyword, schema[keyword]);
  for (const keyword of [...SCHEMA_LISTS, ...IN_PLACE_LISTS]) {
    const list = schema[keyword];
    if (Array.isArray(list)) list.forEach((item, i) => add(`${keyword}/${i}`, item));
  }
  for (const keyword of [...SCHEMA_MAPS, ...IN_PLACE_MAPS]) {
    const map = schema[keyword];
    if (isSchema(map)) for (const [name, item] of Object.entries(map)) add(`${keyword}/${escapePointer(name)}`, item);
  }
  return children;
}

function inPlaceChildren(schema: Schema): Schema[] {
  const children: Schema[] = [];
  for (const keyword of IN_PLACE_ONE) if (isSchema(schema[keyword])) children.push(schema[keyword]);
  for (const keyword of IN_PLACE_LISTS) {
    const list = schema[keyword];
    if (Array.isArray(list)) children.push(...list.filter(isSchema));
  }
  for (const keyword of IN_PLACE_MAPS) {
    const map = schema[keyword];
    if (isSchema(map)) children.push(...Object.values(map).filter(isSchema));
  }
  return children;
}

function resolveRef(
  ref: string,
  node: SchemaNode,
  resources: Map<string, Schema>,
  anchors: Map<string, Schema>,
): SchemaNode {
  const at = `${node.path || '/'}`;
  const unresolvable = () =>
    new SchemaRefError(
      `an unresolvable $ref at ${at}: ${JSON.stringify(ref)} (only refs to a part of the same schema are followed)`,
    );
  let uri: URL;
  let fragment: string;
  try {
    uri = new URL(ref, node.base);
    fragment = decodeURIComponent(uri.hash.slice(1));
  } catch {
    throw new SchemaRefError(`a $ref that is not a URI reference at ${at}: ${JSON.stringify(ref)}`);
  }
  const document = withoutFragment(uri.href);
  const resource = resources.get(document);
  if (resource === undefined) throw unresolvable();
  const target =
    fragment === ''
      ? resource
      : fragment.startsWith('/')
        ? followPointer(resource, fragment)
        : anchors.get(`${document}#${fragment}`);
  if (target === undefined) throw unresolvable();
  return { schema: target, path: `${ref}`, base: document };
}

function followPointer(resource: Schema, pointer: string): Schema | undefined {
  let current: unknown = resource;
  for (const segment of pointer.slice(1).split('/')) {
    const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return isSchema(current) ? current : undefined;
}

/**
 * A node on a cycle of in-place edges, found by an iterative depth-first search; or, when there is none, the nodes in
 * the order the search finished them (every in-place target before the schemas that apply it).
 */
function findCycle(
  nodes: readonly SchemaNode[],
  edges: Map<Schema, Schema[]>,
): { loop: SchemaNode } | { order: Schema[] } {
  const order: Schema[] = [];
  const byObject = new Map(nodes.map((node) => [node.schema, node]));
  const state = new Map<Schema, 'open' | 'done'>();
  for (const start of nodes) {
    if (state.has(start.schema)) continue;
    const stack: { schema: Schema; next: number }[] = [{ schema: start.schema, next: 0 }];
    state.set(start.schema, 'open');
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { schema: Schema; next: number };
      const targets = edges.get(top.schema) ?? [];
      if (top.next >= targets.length) {
        state.set(top.schema, 'done');
        order.push(top.schema);
        stack.pop();
        continue;
      }
      const target = targets[top.next++] as Schema;
      const seen = state.get(target);
      if (seen === 'open') return { loop: byObject.get(target) ?? start };
      if (seen === undefined) {
        state.set(target, 'open');
        stack.push({ schema: target, next: 0 });
      }
    }
  }
  return { order };
}

function listAt<K, V>(map: Map<K, V[]>, key: K): V[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function withoutFragment(uri: string): string {
  const hash = uri.indexOf('#');
  return hash === -1 ? uri : uri.slice(0, hash);
}

function escapePointer(name: string): string {
  return name.replaceAll('~', '~0').replaceAll('/', '~1');
}
