// A tool call's arguments checked against the JSON Schema its catalog entry publishes (docs/catalog.md, "Schema
// validation"), with the schema's defaults applied: what both the api (tools/call) and the worker (a child task
// started by ctx.callTool, docs/durable-execution.md) hold a call to, so that a call is held to the same rules whoever
// makes it. The validation itself is packages/protocol's one implementation (schema-validation.ts: linear-time
// patterns, one compiler per tool), compiled once per schema by the catalog's admission and run within the schema
// budget (schema-budget.ts: on the event loop when cheap, else in a schema thread with a deadline).
import { InvalidInputError, LimitExceededError, UnavailableError, type CatalogEntry } from '@mcp-tasks/protocol';
import type { SchemaBudget } from './schema-budget.ts';

export class ArgumentValidator {
  constructor(private readonly schemas: SchemaBudget) {}

  /**
   * Validated arguments with the schema's defaults applied, or InvalidInputError saying which argument is wrong (or
   * that validating them exceeded its budget). `bytes`: their size as JSON, when the caller measured it.
   */
  async parse(entry: CatalogEntry, args: unknown, bytes?: number): Promise<unknown> {
    const verdict = await this.schemas.validate(entry, args, bytes);
    if (verdict.ok) return verdict.value;
    if ('problems' in verdict) {
      throw new InvalidInputError(`Invalid arguments for tool '${entry.name}': ${verdict.problems}`);
    }
    if ('busy' in verdict) {
      throw new LimitExceededError(
        'schema_validations',
        verdict.busy,
        `The arguments of tool '${entry.name}' cannot be validated now: ${verdict.busy} validations wait for ` +
          'the schema threads (SCHEMA_THREADS); try again',
      );
    }
    // Entries come from the catalog's admission, which compiled them: this is for one that did not pass through it.
    throw new UnavailableError(`Tool '${entry.name}' has an input schema that cannot be used: ${verdict.unusable}`);
  }
}
