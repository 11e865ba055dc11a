/**
 * @mcp-tasks/cli — the operator CLI (`mcpt`): overview, list, inspect, cancel, retry and purge tasks of every
 * owner, through the engine's TaskAdmin.
 *
 * @example
 * const status = await runCli(['list', '--status', 'failed', '--json']);
 */
export { buildProgram, ExitCode, runCli } from './cli.ts';
export { parseDuration, formatDuration } from './duration.ts';
export type { CliIo } from './io.ts';
export {
  chooseRedis,
  readStartState,
  removeStartState,
  startStatePath,
  writeStartState,
  type StartState,
} from './start-state.ts';
