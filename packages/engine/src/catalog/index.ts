/**
 * The tool catalog (docs/catalog.md): publishing and reading it within its bounds, what a reader says of a task
 * whose tool no live worker serves, and the one validation of arguments within the schema budget (its threads).
 */
export { CatalogConflictError, type CatalogRefusal, CatalogView, logCatalogRefusals } from './catalog.ts';
export {
  type ArgumentsVerdict,
  DEFAULT_SCHEMA_BUDGET,
  SchemaBudget,
  type SchemaBudgetSettings,
} from './schema-budget.ts';
export { ArgumentValidator } from './tool-arguments.ts';
export { unservedMessage, withServedStatus } from './unserved.ts';
