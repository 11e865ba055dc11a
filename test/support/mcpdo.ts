// MCP Inspector's terminal client `mcpdo` for interop tests: installed through npx with Node 22 (it needs
// >= 22.19; the npm package node@22 supplies it, as scripts/conformance.mjs does), run against a private daemon
// whose state (catalog, secrets, socket) lives in a temporary directory and is removed, daemon stopped, at the end.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NODE_22_PACKAGE, NPX_CACHED } from '../../scripts/lib/downloads.ts';
import { track } from './resources.ts';

export const INSPECTOR_PACKAGE = '@modelcontextprotocol/inspector@2.12.0';
const run = promisify(execFile);

export interface McpdoResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (commands run with --format json). */
  json: Record<string, unknown>;
}

export interface Mcpdo {
  /** Runs `mcpdo <args> --format json` and returns its output, whatever its exit code. */
  run(args: string[], timeoutMs?: number): Promise<McpdoResult>;
  close(): Promise<void>;
}

export interface InspectorBins {
  /** Node 22 (the Inspector needs >= 22.19). */
  node: string;
  /** The terminal client. */
  mcpdo: string;
  /** The launcher: `mcp-inspector --web` serves the web UI. */
  launcher: string;
}

/** Installs (first run: downloads) Node 22 and the Inspector through npx and says where their programs are. */
export async function locateInspector(): Promise<InspectorBins> {
  const located = await run(
    'npx',
    [
      ...NPX_CACHED,
      '-p',
      NODE_22_PACKAGE,
      '-p',
      INSPECTOR_PACKAGE,
      '--',
      'sh',
      '-c',
      'command -v node; command -v mcpdo; command -v mcp-inspector',
    ],
    { timeout: 240_000, maxBuffer: 1 << 20 },
  );
  const [node, mcpdo, launcher] = located.stdout.trim().split('\n');
  if (!node || !mcpdo || !launcher) {
    throw new Error(`the Inspector's programs not found after npx:\n${located.stdout}\n${located.stderr}`);
  }
  return { node, mcpdo, launcher };
}

/** Installs (first run: downloads) Node 22 and the Inspector, and prepares a private daemon. */
export async function startMcpdo(): Promise<Mcpdo> {
  const { node, mcpdo: bin } = await locateInspector();
  const home = mkdtempSync(join(tmpdir(), 'mcpt-mcpdo-'));
  const env = {
    ...process.env,
    HOME: home,
    MCP_CATALOG_PATH: join(home, 'mcp.json'),
    MCP_INSPECTOR_DAEMON_DIR: join(home, 'daemon'),
    MCP_INSPECTOR_DAEMON_TOKEN: randomBytes(24).toString('hex'),
    MCP_INSPECTOR_SECRET_STORE: 'file',
    NO_COLOR: '1',
  };
  const mcpdo = async (args: string[], timeoutMs = 60_000): Promise<McpdoResult> => {
    try {
      const { stdout, stderr } = await run(node, [bin, ...args, '--format', 'json'], {
        env,
        timeout: timeoutMs,
        maxBuffer: 8 << 20,
      });
      return { code: 0, stdout, stderr, json: parse(stdout) };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      const stdout = failed.stdout ?? '';
      return {
        code: typeof failed.code === 'number' ? failed.code : 1,
        stdout,
        stderr: failed.stderr ?? '',
        json: parse(stdout),
      };
    }
  };
  const release = track('mcpdo daemon', async () => {
    await run(node, [bin, 'daemon', 'stop'], { env, timeout: 30_000 }).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  });
  return { run: mcpdo, close: release };
}

/**
 * A system (`starting`) and mcpdo with two connections to its api on one era, as two terminals of one user would
 * have: `runner` makes the calls (mcpdo keeps one call in flight per connection) and `ops` reads and cancels
 * meanwhile. npx's look-up of the Inspector runs while the system's processes start, not after them; if either
 * fails, whichever started is stopped.
 */
export async function startSystemWithMcpdo<S extends { apiUrl: string; stop(): Promise<void> }>(
  starting: Promise<S>,
  era: 'legacy' | 'modern',
  header: string,
): Promise<{ system: S; mcpdo: Mcpdo }> {
  const [system, mcpdo] = await Promise.allSettled([starting, startMcpdo()]);
  const stopBoth = async () => {
    if (system.status === 'fulfilled') await system.value.stop();
    if (mcpdo.status === 'fulfilled') await mcpdo.value.close();
  };
  if (system.status === 'rejected' || mcpdo.status === 'rejected') {
    await stopBoth();
    throw system.status === 'rejected' ? system.reason : (mcpdo as PromiseRejectedResult).reason;
  }
  try {
    await connectBoth(mcpdo.value, system.value.apiUrl, era, header);
  } catch (error) {
    await stopBoth();
    throw error;
  }
  return { system: system.value, mcpdo: mcpdo.value };
}

async function connectBoth(mcpdo: Mcpdo, apiUrl: string, era: 'legacy' | 'modern', header: string): Promise<void> {
  for (const name of ['runner', 'ops']) {
    const connected = await mcpdo.run(['connect', apiUrl, '--connection', name, '--era', era, '--header', header]);
    expect(connected.json, connected.stderr).to.include({ name, protocolEra: era });
  }
}

/** The JSON of a command that must have succeeded. */
export function succeeded(result: McpdoResult): Record<string, unknown> {
  expect(result.code, `${result.stdout}\n${result.stderr}`).to.equal(0);
  expect(result.json, result.stdout).to.not.have.property('error');
  return result.json;
}

function parse(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
}
