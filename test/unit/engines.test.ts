// Engines that tell the truth (issue 31): the Node range the published package declares (publishConfig.engines,
// which `pnpm pack` writes into the tarball's package.json) must be one every runtime dependency admits, down to
// the last transitive one, or an install on the lowest admitted Node warns EBADENGINE and may not run.
import { expect } from 'chai';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import semver from 'semver';
import { repoRoot } from '../support/processes.ts';

type Manifest = {
  name: string;
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  publishConfig?: { engines?: { node?: string } };
};

const runnerDir = join(repoRoot, 'apps', 'runner');
const read = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** Node's resolution: the first node_modules/<name> up from the dependent's real directory. */
function resolveDependency(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}

/** Every package the runner needs at run time, transitively (an optional dependency only when installed). */
function runtimeDependencies(): Map<string, Manifest> {
  const found = new Map<string, Manifest>();
  const pending: [string, string, boolean][] = Object.keys(read(runnerDir).dependencies ?? {}).map((name) => [
    runnerDir,
    name,
    false,
  ]);
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [from, name, optional] = next;
    const dir = resolveDependency(from, name);
    if (!dir) {
      expect(optional, `${name} (needed by ${from}) is not installed`).to.equal(true);
      continue;
    }
    if (found.has(dir)) continue;
    const manifest = read(dir);
    found.set(dir, manifest);
    for (const dep of Object.keys(manifest.dependencies ?? {})) pending.push([dir, dep, false]);
    for (const dep of Object.keys(manifest.optionalDependencies ?? {})) pending.push([dir, dep, true]);
  }
  return found;
}

describe('the Node range of the published package (issue 31)', () => {
  const published = read(runnerDir).publishConfig?.engines?.node ?? '';

  it('is declared for publishing and starts at Node 22.15 (issue 31)', () => {
    expect(published).to.equal('>=22.15.0');
    expect(semver.minVersion(published)?.version).to.equal('22.15.0');
  });

  it("is admitted by every runtime dependency's own engines.node, transitively (issue 31)", () => {
    const dependencies = runtimeDependencies();
    expect(dependencies.size).to.be.above(50);
    const refused: string[] = [];
    let declaring = 0;
    for (const { name, version, engines } of dependencies.values()) {
      if (!engines?.node) continue;
      declaring++;
      if (!semver.subset(published, engines.node)) refused.push(`${name}@${version} wants node ${engines.node}`);
    }
    expect(declaring).to.be.above(5);
    expect(refused, `dependencies that do not admit ${published}`).to.deep.equal([]);
  });

  it('would catch the range it replaces: Node 20.19 is refused by a dependency (issue 31)', () => {
    const refusing = [...runtimeDependencies().values()].filter(
      ({ engines }) => engines?.node && !semver.subset('>=20.19.0', engines.node),
    );
    expect(refusing.map(({ name }) => name)).to.include('@opentelemetry/core');
  });
});
