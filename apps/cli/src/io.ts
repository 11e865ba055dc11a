// Where a command's output goes: stdout/stderr of the process, or buffers in tests.

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
}

export function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
  };
}

/** Prints `data` as JSON (for scripts, --json) or the text made for people. */
export function emit(io: CliIo, json: boolean, data: unknown, text: () => string): void {
  io.out(json ? `${JSON.stringify(data, null, 2)}\n` : `${text()}\n`);
}
