// The engine reads its Lua scripts from ./lua next to its code at run time (packages/engine/src/scripts.ts):
// ship them next to the bundle.
import { cpSync } from 'node:fs';

cpSync(new URL('../../engine/src/lua/', import.meta.url), new URL('../dist/lua/', import.meta.url), {
  recursive: true,
});
