// A tool call's arguments checked against the JSON Schema its catalog entry publishes (docs/catalog.md, "Schema
// validation"), with the schema's defaults applied: what both the api (tools/call) and the worker (a child task
// started by ctx.callTool, docs/durable-execution.md) hold a call to, so that a call is held to the same rules whoever
// makes it. The validation itself is packages/protocol's one implementation (schema-validation.ts: linear-time
// patterns, one compiler per tool), compiled once per entry by the catalog's admission.
import {
  argumentsValidatorOf,
  InvalidInputError,
  SchemaError,
  UnavailableError,
  type ArgumentsValidator,
  type CatalogEntry,
} from '@mcp-tasks/protocol';

export class ArgumentValidator {
  /** Validated arguments with the schema's defaults applied, or InvalidInputError saying which argument is wrong. */
  parse(entry: CatalogEntry, args: unknown): unknown {
    const value = structuredClone(args ?? {});
    const check = validatorOf(entry)(value);
    if (check.ok) return value;
    throw new InvalidInputError(`Invalid arguments for tool '${entry.name}': ${check.problems}`);
  }
}

function validatorOf(entry: CatalogEntry): ArgumentsValidator {
  try {
    return argumentsValidatorOf(entry);
  } catch (error) {
    // Entries come from the catalog's admission, which compiled them: this is for one that did not pass through it.
    if (!(error instanceof SchemaError)) throw error;
    throw new UnavailableError(`Tool '${entry.name}' has an input schema that cannot be used: ${error.message}`);
  }
}
