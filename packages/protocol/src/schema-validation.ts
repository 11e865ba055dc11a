// Validation of a tool's arguments against the JSON Schema its catalog entry publishes (docs/catalog.md, "Schema
// validation"): the one implementation the api uses to check calls and the catalog uses to admit entries. The schema
// is untrusted input, so it is checked before ajv compiles it, each tool compiles in an ajv of its own (its `$id`s
// cannot clash with another tool's) and patterns run in linear time. What compiling and validating may cost is bounded
// by the cost model (schema-cost.ts) and, where it is not cheap, run off the event loop (engine: schema-budget.ts).
import { Ajv as AjvDraft07, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { canonicalJson } from './canonical-json.ts';
import { collectUncheckedPatterns, linearRegExpEngine } from './linear-pattern.ts';
import { checkSchemaRefs, type SchemaGraph } from './schema-refs.ts';

// ajv-formats is CommonJS: its module.exports is the plugin itself (the typings describe only `exports.default`).
const addFormats = formatsModule as unknown as <A extends Ajv2020 | AjvDraft07>(ajv: A) => A;
/** Schemas that name draft-07 (the zod 3 and SDK v1 servers' default, so most upstream MCP servers': docs/gateway.md). */
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

const COMMON: Options = { strict: false, allErrors: true, logger: false };
/**
 * One tool's compiler. The meta-schema is compiled once per process (metaValidators), not once per tool; `$ref`s are
 * not inlined, so the code ajv generates grows with the schema, not with the number of paths through its refs; and
 * ajv's optimization pass is skipped: it takes about as long as generating the code, and saves validations of a few
 * arguments a fraction of a microsecond. Compiling costs about 6 ms of CPU for a tool of ten properties and up to
 * about 0.5 s for an entry at the 64 KiB bound (docs/catalog.md, "Schema validation").
 */
const ISOLATED: Options = {
  ...COMMON,
  useDefaults: true,
  meta: false,
  validateSchema: false,
  inlineRefs: false,
  code: { regExp: linearRegExpEngine, optimize: false },
};

/** A schema that cannot be used to validate arguments; the message says why, for operators. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

export type ArgumentsCheck = { ok: true } | { ok: false; problems: string };
/**
 * Checks arguments (applying the schema's defaults to them in place). `uncheckedPatterns`: the schema's patterns that
 * no linear-time engine runs (lookaround, backreferences), left to the tool's own validation.
 */
export type ArgumentsValidator = ((value: unknown) => ArgumentsCheck) & { uncheckedPatterns: readonly string[] };

let metaValidators: { draft2020: Ajv2020; draft07: AjvDraft07 } | undefined;

function isDraft07(schema: Record<string, unknown>): boolean {
  return typeof schema['$schema'] === 'string' && DRAFT_07.test(schema['$schema']);
}

/**
 * What can be known of a schema without compiling it: that it passes its draft's meta-schema and that its refs resolve
 * without a loop (its graph, for the cost model), or SchemaError. Call it on a schema whose depth is bounded.
 */
export function checkArgumentsSchema(schema: Record<string, unknown>): SchemaGraph {
  metaValidators ??= { draft2020: addFormats(new Ajv2020(COMMON)), draft07: addFormats(new AjvDraft07(COMMON)) };
  const meta = isDraft07(schema) ? metaValidators.draft07 : metaValidators.draft2020;
  if (!meta.validateSchema(schema)) {
    throw new SchemaError(`it is not a valid JSON Schema: ${meta.errorsText(meta.errors, { dataVar: 'schema' })}`);
  }
  try {
    return checkSchemaRefs(schema);
  } catch (error) {
    throw new SchemaError(`it has ${(error as Error).message}`);
  }
}

/**
 * The schema's validator, or SchemaError. A schema without `$schema` is draft 2020-12, as MCP says; one that names
 * draft-07 is read as draft-07. Call it on a schema whose depth is bounded (the catalog's bounds): ajv recurses.
 * `checked`: checkArgumentsSchema passed on this schema already.
 */
export function compileArgumentsSchema(schema: Record<string, unknown>, checked = false): ArgumentsValidator {
  const draft07 = isDraft07(schema);
  if (!checked) checkArgumentsSchema(schema);
  const ajv = withLinearUniqueItems(addFormats(draft07 ? new AjvDraft07(ISOLATED) : new Ajv2020(ISOLATED)));
  let validate: ValidateFunction;
  let uncheckedPatterns: string[];
  try {
    ({ value: validate, unchecked: uncheckedPatterns } = collectUncheckedPatterns(() => ajv.compile(schema)));
  } catch (error) {
    throw new SchemaError(`it does not compile: ${compileFailure(error)}`);
  }
  const check = (value: unknown): ArgumentsCheck => {
    try {
      return validate(value) ? { ok: true } : { ok: false, problems: describeErrors(validate.errors ?? []) };
    } catch (error) {
      // A safety net: the checks above leave ajv nothing to recurse on without end.
      return { ok: false, problems: `they could not be validated (${compileFailure(error)})` };
    }
  };
  return Object.assign(check, { uncheckedPatterns });
}

function compileFailure(error: unknown): string {
  if (error instanceof RangeError) return 'it is too deeply nested or recursive for the validator';
  return error instanceof Error ? error.message : String(error);
}

/**
 * ajv's `uniqueItems` compares every pair of items that are not all of one scalar type: 30,000 small objects take
 * seconds. This one keeps each item's canonical JSON in a set, in time linear in the array's size.
 */
function withLinearUniqueItems<A extends Ajv2020 | AjvDraft07>(ajv: A): A {
  ajv.removeKeyword('uniqueItems');
  const check = (unique: boolean, data: unknown[]): boolean => {
    if (!unique) return true;
    const seen = new Map<string, number>();
    for (const [index, item] of data.entries()) {
      const key = canonicalJson(item);
      const first = seen.get(key);
      if (first !== undefined) {
        check.errors = [
          {
            keyword: 'uniqueItems',
            message: `must NOT have duplicate items (items ## ${index} and ${first} are identical)`,
            params: { i: index, j: first },
          },
        ];
        return false;
      }
      seen.set(key, index);
    }
    return true;
  };
  check.errors = [] as Partial<ErrorObject>[];
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: check });
  return ajv;
}

/** `seconds: must be <= 3600; fail: must be boolean`, as zod's issues read (describeIssues). */
function describeErrors(errors: readonly ErrorObject[]): string {
  return errors
    .slice(0, 5)
    .map((error) => {
      const path = error.instancePath.slice(1).replaceAll('/', '.');
      return path ? `${path}: ${error.message ?? 'is invalid'}` : (error.message ?? 'is invalid');
    })
    .join('; ');
}
