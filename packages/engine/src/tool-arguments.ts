// A tool call's arguments checked against the JSON Schema its catalog entry publishes (docs/catalog.md), with the
// schema's defaults applied: the one validation of both the api (tools/call) and the worker (a child task started by
// ctx.callTool, docs/durable-execution.md), so that a call is held to the same rules whoever makes it.
import { canonicalJson, InvalidInputError, UnavailableError, type CatalogEntry } from '@mcp-tasks/protocol';
import { Ajv as AjvDraft07 } from 'ajv';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its module.exports is the plugin itself (the typings describe only `exports.default`).
const addFormats = formatsModule as unknown as <A extends Ajv2020 | AjvDraft07>(ajv: A) => A;
const AJV_OPTIONS = { useDefaults: true, strict: false, allErrors: true, logger: false } as const;
/** Schemas that name draft-07 (the zod 3 and SDK v1 servers' default, so most upstream MCP servers': docs/gateway.md). */
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

export class ArgumentValidator {
  // A schema without `$schema` is draft 2020-12, as MCP says; one that names draft-07 is read as draft-07.
  readonly #ajv = addFormats(new Ajv2020(AJV_OPTIONS));
  readonly #ajvDraft07 = addFormats(new AjvDraft07(AJV_OPTIONS));
  /** By tool: the compiled validator, the schema it was compiled from, and the last entry object that had it. */
  readonly #validators = new Map<string, { schema: string; inputSchema: object; validate: ValidateFunction }>();

  /** Validated arguments with the schema's defaults applied, or InvalidInputError saying which argument is wrong. */
  parse(entry: CatalogEntry, args: unknown): unknown {
    const value = structuredClone(args ?? {});
    const validate = this.#validatorOf(entry);
    if (validate(value)) return value;
    throw new InvalidInputError(`Invalid arguments for tool '${entry.name}': ${describeErrors(validate.errors ?? [])}`);
  }

  #validatorOf(entry: CatalogEntry): ValidateFunction {
    const cached = this.#validators.get(entry.name);
    // The cached catalog hands out the same entry until a publisher changes it: no need to compare schemas then.
    if (cached?.inputSchema === entry.inputSchema) return cached.validate;
    const schema = canonicalJson(entry.inputSchema);
    if (cached?.schema === schema) {
      cached.inputSchema = entry.inputSchema;
      return cached.validate;
    }
    let validate: ValidateFunction;
    try {
      const draft07 = typeof entry.inputSchema['$schema'] === 'string' && DRAFT_07.test(entry.inputSchema['$schema']);
      validate = (draft07 ? this.#ajvDraft07 : this.#ajv).compile(entry.inputSchema);
    } catch (error) {
      throw new UnavailableError(
        `Tool '${entry.name}' has an input schema that cannot be used: ${(error as Error).message}`,
      );
    }
    this.#validators.set(entry.name, { schema, inputSchema: entry.inputSchema, validate });
    return validate;
  }
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
