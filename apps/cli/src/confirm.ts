// Commands that change state (cancel, retry, purge) ask the person at the terminal first, or take --yes. Without a
// terminal (scripts, CI) and without --yes they refuse before touching anything, saying to add --yes: a script that
// forgot it fails at once instead of hanging on a question nobody sees.
import type { Command } from 'commander';
import type { CliIo } from './io.ts';
import { CliError } from './operator.ts';

/** The usage error of a state-changing command run without a terminal and without --yes. */
const USAGE = 2;

export interface YesOption {
  yes?: boolean;
}

/** Adds `-y, --yes` to a command that changes state. */
export function withYesOption(command: Command, what: string): Command {
  return command.option('-y, --yes', `${what} without asking (required without a terminal: scripts, CI)`);
}

/**
 * Refuses at once a command that would have to ask but cannot (no terminal, no --yes). Call it before connecting:
 * nothing is read or changed.
 */
export function refuseUnanswerable(io: CliIo, options: YesOption, command: string): void {
  if (options.yes === true || io.ask) return;
  throw new CliError(
    `mcpt ${command} changes state and asks for confirmation first, but there is no terminal to ask on; ` +
      `add --yes to ${command} without asking`,
    USAGE,
  );
}

/** Asks `question` (a [y/N] is added) unless --yes was given; anything but y or yes changes nothing. */
export async function confirm(io: CliIo, options: YesOption, question: string): Promise<void> {
  if (options.yes === true) return;
  if (!io.ask) throw new Error('confirm() without a terminal: call refuseUnanswerable() first');
  const answer = (await io.ask(`${question} [y/N] `)).trim().toLowerCase();
  if (answer !== 'y' && answer !== 'yes') throw new CliError('Nothing changed: not confirmed.');
}
