// Custom headers from tool parameters (2026-07-28, C26-HDR-4): a property of a tool's input schema may carry
// `"x-mcp-header": "Region"`, and the client then mirrors that argument into `Mcp-Param-Region`, so intermediaries
// can route on it without reading the body. A header that disagrees with the body would route the call by a value
// the tool never sees, so a tools/call is refused (-32020, HTTP 400) unless every declared header mirrors its argument.
import { ModernErrorCode, ProtocolError } from '@mcp-tasks/protocol';
import { decodeHeaderValue } from './classify.ts';

/** One `x-mcp-header` declaration: the header's name part and the argument's path through `properties`. */
export interface ParamHeader {
  name: string;
  path: string[];
}

// RFC 9110 token (tchar): what a header field name may be made of.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PRIMITIVE = new Set(['string', 'integer', 'boolean', 'number']);

/**
 * The declarations of a tool's input schema, reached through nested `properties` only (the spec's static
 * reachability: nothing under `items`, `anyOf`, `$ref`, ...). An annotation that is not a token, repeats another
 * case-insensitively or sits on a property that is not a primitive is no declaration (clients drop such a tool).
 */
export function paramHeadersOf(inputSchema: Record<string, unknown>): readonly ParamHeader[] {
  const cached = declarationsOf.get(inputSchema);
  if (cached) return cached;
  const found: ParamHeader[] = [];
  const seen = new Set<string>();
  const walk = (schema: unknown, path: string[]): void => {
    if (!isObject(schema)) return;
    const annotation = schema['x-mcp-header'];
    if (path.length > 0 && typeof annotation === 'string' && TOKEN.test(annotation) && isPrimitive(schema)) {
      const key = annotation.toLowerCase();
      if (!seen.has(key)) {
        seen.add(key);
        found.push({ name: annotation, path });
      }
    }
    const properties = schema['properties'];
    if (!isObject(properties)) return;
    for (const [property, child] of Object.entries(properties)) walk(child, [...path, property]);
  };
  walk(inputSchema, []);
  declarationsOf.set(inputSchema, found);
  return found;
}

// A catalog entry's schema object lives until the entry changes: its declarations are read once.
const declarationsOf = new WeakMap<object, readonly ParamHeader[]>();

type Headers = Record<string, string | string[] | undefined>;

/**
 * Refuses a call whose `Mcp-Param-*` headers do not mirror its arguments: a present argument needs its header, with
 * the value the spec's encoding gives it (strings as they are or `=?base64?…?=`, integers in decimal, booleans as
 * `true`/`false`); an absent or null argument must have none. Values compare case-sensitively after decoding.
 */
export function checkParamHeaders(declarations: readonly ParamHeader[], args: unknown, headers: Headers): void {
  for (const { name, path } of declarations) {
    const header = `Mcp-Param-${name}`;
    const raw = headers[header.toLowerCase()];
    const sent = Array.isArray(raw) ? raw[0] : raw;
    const value = valueAt(args, path);
    const argument = `arguments.${path.join('.')}`;
    if (value === undefined || value === null) {
      if (sent !== undefined) {
        throw mismatch(`The ${header} header is sent but ${argument} is absent (omit the header for it)`);
      }
      continue;
    }
    if (sent === undefined) {
      throw mismatch(`The ${header} header is required: the tool declares ${argument} as x-mcp-header '${name}'`);
    }
    const expected = typeof value === 'string' ? value : JSON.stringify(value);
    if (decodeHeaderValue(sent) !== expected) {
      throw mismatch(`The ${header} header does not match ${argument}`);
    }
  }
}

function mismatch(message: string): ProtocolError {
  return new ProtocolError(ModernErrorCode.HeaderMismatch, message);
}

function valueAt(args: unknown, path: readonly string[]): unknown {
  let value = args;
  for (const key of path) {
    if (!isObject(value) || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

function isPrimitive(schema: Record<string, unknown>): boolean {
  const type = schema['type'];
  const types = Array.isArray(type) ? type.filter((entry) => entry !== 'null') : [type];
  return types.length === 1 && typeof types[0] === 'string' && PRIMITIVE.has(types[0]);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
