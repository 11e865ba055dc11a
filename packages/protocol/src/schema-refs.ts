// The `$ref`s of a published JSON Schema, checked before ajv sees it: a ref must resolve inside the schema (nothing
// is fetched), and no chain of refs and in-place applicators (allOf, anyOf, not, if, ...) may lead back to where it
// started without descending into the arguments. Such a loop makes ajv's compiler or its validator recurse until the
// stack overflows (docs/catalog.md, "Schema validation"). The walk is iterative: a schema is untrusted input.

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
/** Applied to the same instance as the schema that holds them: a cycle through these consumes nothing. */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAPS = ['dependentSchemas', 'dependencies'] as const;

/** The base URI of a schema without `$id`: refs resolve against it like a document's own URL. */
const DOCUMENT = 'schema:/root';

type Schema = Record<string, unknown>;

interface Node {
  schema: Schema;
  /** Its JSON pointer from the root, for messages. */
  path: string;
  /** The URI its relative refs resolve against. */
  base: string;
}

export class SchemaRefError extends Error {
  override readonly name = 'SchemaRefError';
}

/** Throws SchemaRefError naming the first unresolvable `$ref` or the first loop. */
export function checkSchemaRefs(root: Schema): void {
  const nodes = collectNodes(root, '', DOCUMENT);
  const known = new Set(nodes.map((node) => node.schema));
  const resources = new Map<string, Schema>();
  const anchors = new Map<string, Schema>();
  for (const node of nodes) {
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
    const node = pending.pop() as Node;
    const targets = inPlaceChildren(node.schema);
    for (const keyword of ['$ref', '$dynamicRef']) {
      const ref = node.schema[keyword];
      if (typeof ref !== 'string') continue;
      const target = resolveRef(ref, node, resources, anchors);
      targets.push(target.schema);
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
  const loop = findCycle(nodes, edges);
  if (loop) {
    throw new SchemaRefError(
      `a $ref loop at ${loop.path || '/'}: it leads back to itself through $ref and in-place keywords ` +
        '(allOf, anyOf, oneOf, not, if/then/else) without descending into the arguments',
    );
  }
}

function collectNodes(root: Schema, path: string, parentBase: string): Node[] {
  const nodes: Node[] = [];
  const stack: Node[] = [{ schema: root, path, base: baseOf(root, parentBase, path) }];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
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

function resolveRef(ref: string, node: Node, resources: Map<string, Schema>, anchors: Map<string, Schema>): Node {
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

/** A node on a cycle of in-place edges, found by an iterative depth-first search. */
function findCycle(nodes: readonly Node[], edges: Map<Schema, Schema[]>): Node | undefined {
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
        stack.pop();
        continue;
      }
      const target = targets[top.next++] as Schema;
      const seen = state.get(target);
      if (seen === 'open') return byObject.get(target) ?? start;
      if (seen === undefined) {
        state.set(target, 'open');
        stack.push({ schema: target, next: 0 });
      }
    }
  }
  return undefined;
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
