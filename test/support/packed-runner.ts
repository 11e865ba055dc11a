// The installable package as a user gets it, for the tests that install it into a fresh project (issue 31): the
// tarball of `pnpm run pack` (built once per content of the sources and cached in the temp directory, because a
// build takes most of a minute), a Node binary of an exact version (the npm package `node@<version>` through npx,
// without touching the system Node, as scripts/conformance.mjs fetches Node 22), and npm run on that Node.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { NPX_CACHED } from '../../scripts/lib/downloads.ts';
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
const PACK_TIMEOUT_MS = 240_000;

/**
 * The path of mcp-task-runner-<version>.tgz built from the sources as they are now. The test shards are processes of
 * their own: the first to get here packs, holding a lock directory beside the cache entry, and the others wait for
 * its tarball (two builds at once would also share apps/runner/dist).
 */
export function packedTarball(): Promise<string> {
  packing ??= (async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'apps', 'runner', 'package.json'), 'utf8')) as {
      version: string;
    };
    const cache = join(tmpdir(), 'mcpt-pack-cache', await sourcesDigest());
    const tarball = join(cache, `mcp-task-runner-${version}.tgz`);
    const lock = `${cache}.lock`;
    mkdirSync(dirname(cache), { recursive: true });
    const deadline = Date.now() + PACK_TIMEOUT_MS;
    while (!existsSync(tarball)) {
      if (tryLock(lock)) {
        try {
          if (existsSync(tarball)) break;
          await run(process.execPath, ['scripts/pack.mjs'], { cwd: repoRoot, timeout: PACK_TIMEOUT_MS });
          mkdirSync(cache, { recursive: true });
          copyFileSync(join(repoRoot, 'dist', `mcp-task-runner-${version}.tgz`), `${tarball}.part`);
          renameSync(`${tarball}.part`, tarball);
        } finally {
          rmSync(lock, { recursive: true, force: true });
        }
        break;
      }
      if (Date.now() > deadline)
        throw new Error(`no tarball after ${PACK_TIMEOUT_MS} ms: another process holds ${lock}`);
      await sleep(500);
    }
    return tarball;
  })();
  return packing;
}

/** Takes the lock directory, or one a packing process left behind when it died (older than a pack may take). */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs < PACK_TIMEOUT_MS) return false;
      rmSync(lock, { recursive: true, force: true });
    } catch {
      // gone meanwhile: try again on the next round
    }
    return false;
  }
}

const nodes = new Map<string, Promise<string>>();

/** The path of a `node` binary of exactly this version (downloaded once by npx, then from its cache). */
export function nodeBinary(version: string): Promise<string> {
  let found = nodes.get(version);
  if (!found) {
    found = run('npx', [...NPX_CACHED, '-p', `node@${version}`, '-c', 'command -v node'], { timeout: 180_000 }).then(
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
