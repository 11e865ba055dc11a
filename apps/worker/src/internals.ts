/**
 * The worker's modules that the repository's own tests and benches reach into (unit tests of one module, the
 * gateway bench): one entry, `@mcp-tasks/worker/internals`, instead of a subpath export per module. Not the package's
 * surface: apps/runner re-exports `@mcp-tasks/worker` ('.') only, and nothing here is promised to stay.
 */
export { DelayedCalls } from './delayed-calls.ts';
export { DurableRun } from './durable-run.ts';
export { outcomeOf, type ToolRun } from './run-tool.ts';
export { afterFailedRun, backoffStrategy, RetryLater, RunTimeoutError } from './scheduling.ts';
export { createToolContext, type ContextDeps } from './tool-context.ts';
export { checkToolResult } from './tool-result.ts';
export { isResendable, isToolAllowed, splitCommand } from './upstream/config.ts';
export { knownSecrets, redactSecrets } from './upstream/redact.ts';
export { UpstreamTools } from './upstream/upstream-tools.ts';
export { attemptWaits, WaitBudget } from './wait-budget.ts';
