// The fast tier's systems: api and worker started inside the test's own process (the apps' startApi and
// startWorker, as `pnpm api` and `pnpm worker` call them) against the shard's Redis, from the same environment the
// process-spawning helpers take (processes.ts). A scenario file switches by importing startSystem from here instead
// of processes.ts: no process to spawn, no tsx to load again, a start in tens of milliseconds instead of seconds.
// What needs a process of its own stays on processes.ts: signals, kill -9, restarts, the packed tarball, the cli,
// reliability, tracing (read from process.env) and interop with external programs (docs/tests.md).
import { AsyncLocalStorage } from 'node:async_hooks';
import { startApi as startApiProcess, loadApiConfig } from '@mcp-tasks/api';
import { loadWorkerConfig, servedSources, startWorker as startWorkerProcess } from '@mcp-tasks/worker';
import { freePort } from '../../scripts/lib/ports.ts';
import {
  parseRecords,
  startSystemWith,
  workerEnv,
  type ServiceHandle,
  type SystemOf,
  type SystemOptions,
} from './processes.ts';
import { track } from './resources.ts';

export type { ServiceHandle, SystemOptions };

export interface InProcessApi extends ServiceHandle {
  url: string;
  port: number;
}

export type System = SystemOf<InProcessApi, ServiceHandle>;

/** Like processes.ts's startSystem, with every api and worker (addWorker's too) inside this process. */
export function startSystem(options: SystemOptions = {}): Promise<System> {
  return startSystemWith({ api: startApi, worker: startWorker }, options);
}

/** Like spawnApi: the api from `env` over this process's environment, JSON logs at info, on a free port. */
export async function startApi(env: Record<string, string>): Promise<InProcessApi> {
  const port = await freePort();
  const full = serviceEnv({ HOST: '127.0.0.1', PORT: String(port), ...env });
  const started = await startService('api', full, () => startApiProcess(loadApiConfig(full)));
  return { ...started, port, url: `http://127.0.0.1:${port}/mcp` };
}

/** Like spawnWorker: debug logs, and the demo tools when `env` names no tools or upstreams. */
export function startWorker(env: Record<string, string>): Promise<ServiceHandle> {
  const full = serviceEnv(workerEnv(env));
  return startService('worker', full, async () => {
    const config = loadWorkerConfig(full);
    const { tools, upstreams } = await servedSources(config, full);
    return startWorkerProcess(config, tools, { upstreams });
  });
}

/** As spawnService gives a child: this process's environment, JSON logs at info unless `env` says otherwise. */
function serviceEnv(env: Record<string, string>): Record<string, string | undefined> {
  return { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env };
}

interface Running {
  log: { info(message: string, fields: Record<string, unknown>): unknown };
  close(): Promise<void>;
}

/**
 * Starts a service with its output captured (not printed) into its own log lines, and registers it with the
 * resources, so that one a test leaves open is closed and reported like a child process.
 */
async function startService(
  name: string,
  env: Record<string, string | undefined>,
  start: () => Promise<Running>,
): Promise<ServiceHandle> {
  const output = new CapturedOutput();
  let running: Running;
  try {
    running = await output.run(start);
  } catch (error) {
    // What a process would have printed before it exited: the start's own lines explain the refusal.
    if (error instanceof Error && output.lines.length > 0) error.message += `\n${output.lines.join('\n')}`;
    throw error;
  }
  let closing: Promise<void> | undefined;
  // Like the entry points' handler of SIGTERM (main.ts): the line, then the close.
  const close = () =>
    (closing ??= output.run(async () => {
      running.log.info('shutting down', { signal: 'SIGTERM' });
      await running.close();
    }));
  const release = track(`${name} in process (${env['REDIS_PREFIX'] ?? 'no prefix'})`, close);
  return {
    name,
    logs: output.lines,
    records: () => parseRecords(output.lines),
    // An uncaught error of a service here fails the test that runs (mocha's handlers), where a process would exit.
    alive: () => closing === undefined,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (signal !== 'SIGTERM' && signal !== 'SIGINT') {
        throw new Error(
          `${name} runs inside the test's process and cannot take ${signal}: ` +
            'start it with test/support/processes.ts for a test that kills it',
        );
      }
      await close();
      await release();
      return 0;
    },
  };
}

/**
 * What a service writes to stdout and stderr while it runs, as lines. Its code runs within an AsyncLocalStorage
 * context (the start, and the close); whatever it starts (servers, connections, timers, BullMQ workers) carries that
 * context into its callbacks, so each line written there lands with the service that wrote it, and is not printed
 * among the test report's lines. Writes outside every service's context go to the real streams as before.
 */
class CapturedOutput {
  readonly lines: string[] = [];
  #partial = '';

  run<T>(fn: () => Promise<T>): Promise<T> {
    installCapture();
    return capture.storage.run(this, fn);
  }

  take(chunk: string): void {
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const line of parts) if (line.trim() !== '') this.lines.push(line);
  }
}

// One per process, like resources.ts's registry: a test file loaded through import() has its own instance of this
// module, and two patches of process.stdout would each miss the other's services.
const capture = ((globalThis as Record<symbol, unknown>)[Symbol.for('mcpt.test.capturedOutput')] ??= {
  storage: new AsyncLocalStorage<CapturedOutput>(),
  installed: false,
}) as { storage: AsyncLocalStorage<CapturedOutput>; installed: boolean };

function installCapture(): void {
  if (capture.installed) return;
  capture.installed = true;
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    const captured = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      const output = capture.storage.getStore();
      if (!output) return write(chunk, ...rest);
      output.take(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
      if (callback) process.nextTick(callback);
      return true;
    };
    stream.write = captured;
  }
}
