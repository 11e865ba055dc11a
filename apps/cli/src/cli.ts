// The `mcpt` program: one command per operator task, each with --help, --json for scripts and tables otherwise.
import { Command, CommanderError } from 'commander';
import { AdminError } from '@mcp-tasks/engine';
import { ConfigError } from '@mcp-tasks/runtime';
import { ProtocolError } from '@mcp-tasks/protocol';
import { registerCancel } from './commands/cancel.ts';
import { registerInspect } from './commands/inspect.ts';
import { registerList } from './commands/list.ts';
import { registerOverview } from './commands/overview.ts';
import { registerPurge } from './commands/purge.ts';
import { registerRetry } from './commands/retry.ts';
import { registerSignal } from './commands/signal.ts';
import { processIo, type CliIo } from './io.ts';
import { CliError } from './operator.ts';

export const ExitCode = { Ok: 0, Failed: 1, Usage: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

const ENVIRONMENT_HELP = `
Environment (the same as for the api and the workers):
  REDIS_URL             the Redis to operate on (default: that of a running \`mcpt start\`, else
                        redis://127.0.0.1:6379); the first line on stderr says which one is read
  MCPT_STATE_DIR        where \`mcpt start\` notes its Redis (default $XDG_RUNTIME_DIR/mcpt or <tmp>/mcpt-<uid>)
  REDIS_CLUSTER_NODES   seed nodes of a Redis Cluster, instead of REDIS_URL
  REDIS_PREFIX          key prefix of the installation (default mcpt)
  SESSION_IDLE_TTL_MS   idle lifetime of a session's event stream, which cancel writes to (default 3600000)

cancel, retry and purge ask for confirmation at a terminal; add --yes in scripts (without a terminal they refuse).

Exit status: 0 done, 1 the command failed (unknown task, not allowed, not confirmed, Redis unreachable), 2 usage
error (--yes missing without a terminal included).`;

export function buildProgram(io: CliIo): Command {
  const program = new Command('mcpt')
    .description('Operate an mcp-task-runner installation: inspect, cancel, retry and purge MCP tasks of every owner')
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', ENVIRONMENT_HELP);
  registerOverview(program, io);
  registerList(program, io);
  registerInspect(program, io);
  registerCancel(program, io);
  registerRetry(program, io);
  registerSignal(program, io);
  registerPurge(program, io);
  return program;
}

/** Runs one command line (without the program name) and resolves with the exit status; never exits the process. */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<ExitCode> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    if (error instanceof ConfigError) {
      io.err(`${error.message}\n`);
      return ExitCode.Usage;
    }
    if (error instanceof CliError || error instanceof AdminError || error instanceof ProtocolError) {
      io.err(`error: ${error.message}\n`);
      return error instanceof CliError && error.exitCode === ExitCode.Usage ? ExitCode.Usage : ExitCode.Failed;
    }
    io.err(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return ExitCode.Failed;
  }
}
