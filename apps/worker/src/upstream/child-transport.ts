// The stdio side of an upstream MCP server: a child process in a process group of its own, spoken to over its stdin
// and stdout, one JSON-RPC message per line. Ours rather than the SDK's StdioClientTransport because the gateway
// needs what that one does not give: the whole group stopped (`npx` starts the server as its own child), how the
// child ended (for a message in our words), and a send that says whether the message left at all.
import { spawn, type ChildProcess } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { NotSentError } from './failures.ts';

/** One line on stdout at most this long (bytes) before the upstream is deemed broken and stopped. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** A stderr line is cut to this many characters before it is logged. */
const STDERR_LINE_CHARS = 500;
/** After stdin closes, the child gets this long to exit before SIGTERM, then as long again before SIGKILL. */
const STOP_GRACE_MS = 1000;

export interface ChildCommand {
  command: string;
  args: readonly string[];
  /** Added to the SDK's small default environment (PATH, HOME, ...), not the worker's whole one. */
  env: Readonly<Record<string, string>>;
  cwd?: string;
  /** Each line the child writes to stderr (it is the child's log: never shown to a client). */
  onStderr(line: string): void;
}

/** How the child ended, in words for a status message: `exited with code 1`, `was killed by SIGKILL`. */
export function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${String(exit.code)}`;
}

export class ChildProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  #child: ChildProcess | undefined;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #exited: Promise<void> | undefined;
  readonly #buffer = new ReadBuffer({ maxBufferSize: MAX_MESSAGE_BYTES });

  constructor(private readonly spec: ChildCommand) {}

  /** How the child ended; undefined while it runs. */
  get exit(): string | undefined {
    return this.#exit && describeExit(this.#exit);
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    const { spec } = this;
    const child = spawn(spec.command, [...spec.args], {
      env: { ...getDefaultEnvironment(), ...spec.env },
      ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: stopping the group also stops what it started (npx runs the server as a child).
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    this.#child = child;
    this.#exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.#exit = { code, signal };
        this.#child = undefined;
        // Whatever it left running in its group goes with it.
        killGroup(child, 'SIGKILL');
        resolve();
        this.onclose?.();
      });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error: NodeJS.ErrnoException) => {
        reject(new Error(`could not start '${spec.command}' (${error.code ?? error.message})`));
      });
    });
    child.on('error', (error) => this.onerror?.(error));
    child.stdin?.on('error', (error) => this.onerror?.(error));
    child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
    readLines(child, (line) => spec.onStderr(line.slice(0, STDERR_LINE_CHARS)));
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || stdin.destroyed || !stdin.writable) {
      return Promise.reject(new NotSentError(`the upstream process ${this.exit ?? 'is not running'}`));
    }
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) =>
        error
          ? reject(new NotSentError(`the upstream process did not take the message (${error.message})`))
          : resolve(),
      );
    });
  }

  /** Closes stdin (most servers exit then), then stops the process group: SIGTERM, and SIGKILL if it lingers. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || !this.#exited) return;
    child.stdin?.end();
    if (await within(this.#exited, STOP_GRACE_MS)) return;
    killGroup(child, 'SIGTERM');
    if (await within(this.#exited, STOP_GRACE_MS)) return;
    killGroup(child, 'SIGKILL');
    await this.#exited;
  }

  #read(chunk: Buffer): void {
    try {
      this.#buffer.append(chunk);
    } catch (error) {
      // A line longer than any message we accept: the stream can no longer be read, so the upstream is stopped.
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        // Not JSON-RPC (a server printing to stdout): that line is dropped, the next ones are read.
        this.onerror?.(new Error(`the upstream wrote a line that is not JSON-RPC (${(error as Error).name})`));
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }
}

function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  let partial = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = (lines.pop() ?? '').slice(-STDERR_LINE_CHARS);
    for (const line of lines) if (line.trim() !== '') onLine(line.trim());
  });
  child.stderr?.on('end', () => {
    if (partial.trim() !== '') onLine(partial.trim());
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === 'win32') child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // Gone already.
  }
}

async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
