// The bundle reads files next to its code at run time, found through import.meta.url as from source: the engine's
// Lua scripts (packages/engine/src/scripts.ts) and the dashboard's pages, styles and browser scripts
// (apps/api/src/admin-assets.ts). Ship them next to the bundle: dist/lua and dist/admin-assets.
import { cpSync } from 'node:fs';

const folders = [
  ['../../../packages/engine/src/lua/', '../dist/lua/'],
  ['../../api/src/admin-assets/', '../dist/admin-assets/'],
];
for (const [from, to] of folders) {
  cpSync(new URL(from, import.meta.url), new URL(to, import.meta.url), { recursive: true });
}
