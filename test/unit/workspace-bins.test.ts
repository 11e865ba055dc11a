// `npm start` on a fresh clone installs the workspace first; pnpm links the bins of every workspace package, and a
// bin whose file does not exist yet (a build output) makes it print "Failed to create bin ... ENOENT" (issue 31).
// Build outputs are published bins only: `publishConfig.bin`, which `pnpm pack` applies.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../support/processes.ts';

type Manifest = { name: string; bin?: string | Record<string, string> };

function workspacePackages(): string[] {
  const dirs = [repoRoot];
  for (const group of ['apps', 'packages']) {
    for (const name of readdirSync(join(repoRoot, group))) {
      if (existsSync(join(repoRoot, group, name, 'package.json'))) dirs.push(join(repoRoot, group, name));
    }
  }
  return dirs;
}

describe('workspace bins (issue 31)', () => {
  it('every bin a workspace package declares is a file of a fresh clone, so installing prints no ENOENT (issue 31)', () => {
    // Tracked by git, not merely present: a local build leaves dist/ behind, a fresh clone has none.
    const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: repoRoot, encoding: 'utf8' }).split('\n'));
    const checked: string[] = [];
    for (const dir of workspacePackages()) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
      const bins = typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : (manifest.bin ?? {});
      for (const [name, file] of Object.entries(bins)) {
        const path = relative(repoRoot, join(dir, file));
        expect(tracked.has(path), `${manifest.name}: bin ${name} -> ${path} (not in a fresh clone)`).to.equal(true);
        checked.push(name);
      }
    }
    expect(checked).to.include('mcpt');
  });
});
