// What the tests and scripts download (through npx, from the npm registry), in one place: exact versions, so that
// each is downloaded once per machine into npm's own cache (~/.npm; `npm config get cache`) and found there on
// every later run, instead of a floating `node@22` that fetched again whenever a newer 22.x came out. The tests that
// download carry DOWNLOADS_TAG in their describe titles (docs/tests.md): `--grep @downloads --invert` leaves them out.

/** Node 22 for the programs that need it (the conformance suite; MCP Inspector, which needs >= 22.19). */
export const NODE_22_PACKAGE = 'node@22.23.3';

/** The lowest Node the published package admits (publishConfig.engines), run by the tests of the packed tarball. */
export const LOWEST_NODE = '22.15.0';

/** npx's flags for a pinned download: take it from npm's cache when there, without asking the registry again. */
export const NPX_CACHED = ['--yes', '--prefer-offline'];

/** In the describe title of every test that downloads something on its first run. */
export const DOWNLOADS_TAG = '@downloads';
