// The installable package as a user gets it, for the tests that install it into a fresh project (issue 31): the
// tarball of `pnpm run pack` (built once per content of the sources and cached in the temp directory, because a
// build takes most of a minute), a Node binary of an exact version (the npm package `node@<version>` through npx,
// without touching the system Node, as scripts/conformance.mjs fetches Node 22), and npm run on that Node.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './processes.ts';

const run = promisify(execFile);

/** What the tarball is built from: every file git would see under apps/ and packages/, and the root manifest. */
async function sourcesDigest(): Promise<string> {
  const { stdout } = await run('git', ['ls-files', '-co', '--exclude-standard', 'apps', 'packages', 'package.json'], {
    cwd: repoRoot,
    maxBuffer: 16 * 1024 * 1024,
  });
  const hash = createHash('sha256');
  for (const file of stdout.split('\n').filter(Boolean).sort()) {
    const path = join(repoRoot, file);
    if (!existsSync(path)) continue; // deleted but not yet staged
    hash.update(file).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

let packing: Promise<string> | undefined;

/** The path of mcp-task-runner-<version>.tgz built from the sources as they are now. */
export function packedTarball(): Promise<string> {
  packing ??= (async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'apps', 'runner', 'package.json'), 'utf8')) as {
      version: string;
    };
    const cache = join(tmpdir(), 'mcpt-pack-cache', await sourcesDigest());
    const tarball = join(cache, `mcp-task-runner-${version}.tgz`);
    if (existsSync(tarball)) return tarball;
    await run(process.execPath, ['scripts/pack.mjs'], { cwd: repoRoot, timeout: 240_000 });
    mkdirSync(cache, { recursive: true });
    copyFileSync(join(repoRoot, 'dist', `mcp-task-runner-${version}.tgz`), `${tarball}.part`);
    renameSync(`${tarball}.part`, tarball);
    return tarball;
  })();
  return packing;
}

const nodes = new Map<string, Promise<string>>();

/** The path of a `node` binary of exactly this version (downloaded once by npx, then from its cache). */
export function nodeBinary(version: string): Promise<string> {
  let found = nodes.get(version);
  if (!found) {
    found = run('npx', ['-y', '-p', `node@${version}`, '-c', 'command -v node'], { timeout: 180_000 }).then(
      ({ stdout }) => {
        const path = stdout.trim().split('\n').pop() ?? '';
        if (!existsSync(path)) throw new Error(`node@${version} not found after npx: ${stdout}`);
        return path;
      },
    );
    nodes.set(version, found);
  }
  return found;
}

/** npm's own CLI, to run on a given Node: its engine checks then judge that Node, not the one running the tests. */
export async function npmCli(): Promise<string> {
  const { stdout } = await run('npm', ['prefix', '-g']);
  const cli = join(stdout.trim(), 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  if (!existsSync(cli)) throw new Error(`npm's CLI not found at ${cli}`);
  return cli;
}

/** PATH with `node` (and the npm next to it) of the given binary first and nothing of the repository. */
export function pathFor(node: string): string {
  const rest = String(process.env['PATH'])
    .split(':')
    .filter((dir) => !dir.startsWith(repoRoot));
  return [dirname(node), ...rest].join(':');
}
