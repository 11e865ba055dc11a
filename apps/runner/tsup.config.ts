// Builds the installable package: the workspace packages are bundled in (they are private), every real dependency
// stays external and is declared in package.json, and zod is the user's (a peer). scripts/copy-runtime-files.mjs then
// puts what the code reads next to itself at run time into dist: the engine's Lua scripts (dist/lua) and the
// dashboard's pages and browser scripts (dist/admin-assets).
// Why tsup 8.5.1 and not tsdown: tsdown 0.22 and later (and tsup 9) need Node 22, and tsdown 0.21.10's declaration
// bundler (rolldown-plugin-dts 0.23) fails on names that are both a value and a type (TaskSupport); tsup 8.5
// runs on our Node 20 and inlines the workspace packages' types through the paths in tsconfig.json.
import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const manifest = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

export default defineConfig({
  // A schema thread runs its own entry, found beside the code that starts it (packages/engine/src/schema-threads.ts).
  entry: { index: 'src/index.ts', mcpt: 'src/mcpt.ts', 'schema-thread': '../../packages/engine/src/schema-thread.ts' },
  format: 'esm',
  platform: 'node',
  // The published package needs Node 22.15 (publishConfig.engines: its OpenTelemetry dependencies do); the build
  // itself still runs on the workspace's Node 20.
  target: 'node22',
  outDir: 'dist',
  clean: true,
  splitting: true,
  // Types of the workspace packages are inlined too: the tarball must not refer to them. The declaration bundler
  // (rollup-plugin-dts) finds their sources through the paths of tsconfig.json; tsup's own `dts.resolve` must stay
  // off, because it looks for a `types` field the workspace packages do not have and marks them external instead.
  // scripts/check-declarations.mjs fails the build if dist/index.d.ts still imports anything undeclared.
  dts: { entry: { index: 'src/index.ts' } },
  tsconfig: 'tsconfig.json',
  external: [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)],
  noExternal: [/^@mcp-tasks\//],
});
