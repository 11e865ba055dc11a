// The shipped declarations must stand alone: dist/index.d.ts may import only the package's declared dependencies
// and peers (and Node's modules). A workspace package left as an import there (`@mcp-tasks/protocol`) is not in
// the tarball: a user's tsc fails with "Cannot find module", or, with skipLibCheck, every type is silently `any`.
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';

const dist = new URL('../dist/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const declared = new Set([
  ...Object.keys(manifest.dependencies ?? {}),
  ...Object.keys(manifest.peerDependencies ?? {}),
]);

/** `zod` of `zod/v4`, `@scope/name` of `@scope/name/sub`. */
const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

const problems = [];
for (const file of readdirSync(dist).filter((name) => /\.d\.[cm]?ts$/.test(name))) {
  const text = readFileSync(new URL(file, dist), 'utf8');
  for (const [, specifier] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
    if (!declared.has(packageOf(specifier))) problems.push(`${file} imports '${specifier}'`);
  }
}
if (problems.length > 0) {
  console.error(
    `The declarations refer to packages that are neither dependencies nor peers of ${manifest.name}:\n` +
      problems.map((problem) => `  ${problem}`).join('\n') +
      '\nInline them (tsup.config.ts: the paths of tsconfig.json) or declare them in package.json.',
  );
  process.exit(1);
}
