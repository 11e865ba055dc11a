// Where a command's output goes: stdout/stderr of the process, or buffers in tests; and, when a person sits at a
// terminal, how to ask them a question.
import { createInterface } from 'node:readline/promises';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /**
   * Asks the person at the terminal and resolves with their answer (one line). Absent when nobody can answer: stdin
   * or stderr is not a terminal (a script, a pipe, CI), so commands that change state need --yes there.
   */
  ask?: (question: string) => Promise<string>;
}

export function processIo(): CliIo {
  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
    // The question goes to stderr, so that what a command prints on stdout (--json) stays clean.
    ...(interactive ? { ask: askOnTerminal } : {}),
  };
}

async function askOnTerminal(question: string): Promise<string> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await terminal.question(question);
  } finally {
    terminal.close();
  }
}

/** Prints `data` as JSON (for scripts, --json) or the text made for people. */
export function emit(io: CliIo, json: boolean, data: unknown, text: () => string): void {
  io.out(json ? `${JSON.stringify(data, null, 2)}\n` : `${text()}\n`);
}
