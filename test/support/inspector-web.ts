// MCP Inspector's web UI (2.12) for interop tests: its Node server (which also relays the browser's MCP traffic to
// the server under test) on free ports of 127.0.0.1, with its own API token, state in a temporary directory, and
// no browser of its own; stopped and cleaned up at the end.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/ports.ts';
import { locateInspector } from './mcpdo.ts';
import { track } from './resources.ts';

export interface InspectorWeb {
  /** The page to open: the UI's origin with its API token in the query, as the Inspector prints it. */
  url: string;
  origin: string;
  logs: string[];
  stop(): Promise<void>;
}

export interface InspectorWebOptions {
  serverUrl: string;
  era: 'legacy' | 'modern';
  headers?: string[];
}

export async function startInspectorWeb(options: InspectorWebOptions): Promise<InspectorWeb> {
  const { node, launcher } = await locateInspector();
  const home = mkdtempSync(join(tmpdir(), 'mcpt-inspector-web-'));
  const port = await freePort();
  const token = randomBytes(24).toString('hex');
  const args = [
    launcher,
    '--web',
    '--transport',
    'http',
    '--server-url',
    options.serverUrl,
    '--protocol-era',
    options.era,
    ...(options.headers?.length ? ['--header', ...options.headers] : []),
  ];
  const child = spawn(node, args, {
    env: {
      ...process.env,
      HOME: home,
      MCP_STORAGE_DIR: join(home, 'storage'),
      // The web server needs a fixed port (its origin allow-list is derived from it); the MCP Apps sandbox and
      // app origin take any free one.
      HOST: '127.0.0.1',
      CLIENT_PORT: String(port),
      MCP_SANDBOX_PORT: '0',
      MCP_APP_ORIGIN_PORT: '0',
      MCP_INSPECTOR_API_TOKEN: token,
      MCP_INSPECTOR_SECRET_STORE: 'memory',
      MCP_AUTO_OPEN_ENABLED: 'false',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  const logs: string[] = [];
  let up: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (up = resolve));
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() === '') continue;
      logs.push(line);
      if (/is up and running at/.test(line)) up();
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const stop = track('inspector web', async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(home, { recursive: true, force: true });
  });
  const failed = exited.then(() => {
    throw new Error(`the Inspector web UI exited before it was up:\n${logs.join('\n')}`);
  });
  try {
    await Promise.race([ready, failed]);
  } catch (error) {
    await stop();
    throw error;
  }
  failed.catch(() => undefined);
  const origin = `http://127.0.0.1:${port}`;
  return { url: `${origin}/?MCP_INSPECTOR_API_TOKEN=${token}`, origin, logs, stop };
}
