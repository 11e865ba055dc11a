// Tools files as a newcomer writes them (README.md, "Your own tools", and docs/tools.md): in a project `npm init -y` made
// (CommonJS), a tools file in ESM or CommonJS syntax loads, and one that cannot load says which file and what to
// change. Loaded by a plain Node process (tsx's ESM hooks only, which leave .js files to Node), as `mcpt worker` does.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { repoRoot } from '../support/processes.ts';

const require = createRequire(import.meta.url);
const TSX_ESM = pathToFileURL(require.resolve('tsx/esm')).href;
const PRINT = join(repoRoot, 'test/fixtures/load-tools/print-tools.ts');
const ZOD = dirname(require.resolve('zod/package.json'));

const tool = (name: string) =>
  `{ name: '${name}', description: 'd', inputSchema: z.object({}), run: async () => ({ content: [] }) }`;

const FILES: Record<string, string> = {
  // What npm init -y writes (npm 10+ says "type": "commonjs" outright; earlier ones leave it out).
  'package.json': JSON.stringify({ name: 'newcomer', version: '1.0.0', main: 'index.js', type: 'commonjs' }),
  'tools.js': `import { z } from 'zod';\nexport const tools = [${tool('esm_js')}];\n`,
  'default.js': `import { z } from 'zod';\nexport default [${tool('esm_default')}];\n`,
  'tools.mjs': `import { z } from 'zod';\nexport const tools = [${tool('esm_mjs')}];\n`,
  'tools.cjs': `const { z } = require('zod');\nmodule.exports = { tools: [${tool('cjs_cjs')}] };\n`,
  'commonjs.js': `const { z } = require('zod');\nexports.tools = [${tool('cjs_js')}];\n`,
  'helper.js': `export const helper = 1;\n`,
  'imports-helper.mjs': `import { z } from 'zod';\nimport { helper } from './helper.js';\nexport const tools = [${tool('h')}];\n`,
  'esm/package.json': JSON.stringify({ type: 'module' }),
  'esm/commonjs.js': `const { z } = require('zod');\nmodule.exports = { tools: [${tool('cjs_in_esm')}] };\n`,
};

async function load(cwd: string, entries: string[]): Promise<Record<string, { names?: string[]; error?: string }>> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', TSX_ESM, PRINT, ...entries], {
    cwd,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const results = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { entry: string; names?: string[]; error?: string });
  return Object.fromEntries(results.map(({ entry, ...rest }) => [entry, rest]));
}

describe('tools files in ESM or CommonJS, in a CommonJS project (issue 31)', function () {
  this.timeout(60_000);
  let project: string;

  before(async () => {
    project = await mkdtemp(join(tmpdir(), 'mcpt-tools-files-'));
    await mkdir(join(project, 'node_modules'));
    await mkdir(join(project, 'esm'));
    await symlink(ZOD, join(project, 'node_modules', 'zod'), 'dir');
    for (const [file, text] of Object.entries(FILES)) await writeFile(join(project, file), text);
  });
  after(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('loads a .js file written as ESM (the README’s tools.js) in a package that says CommonJS (issue 31)', async () => {
    const results = await load(project, ['./tools.js', './default.js']);
    expect(results['./tools.js']).to.deep.equal({ names: ['esm_js'] });
    expect(results['./default.js']).to.deep.equal({ names: ['esm_default'] });
  });

  it('loads .mjs, .cjs with module.exports = { tools }, and a CommonJS .js with exports.tools (issue 31)', async () => {
    const results = await load(project, ['./tools.mjs', './tools.cjs', './commonjs.js', './tools.js,./tools.cjs']);
    expect(results['./tools.mjs']).to.deep.equal({ names: ['esm_mjs'] });
    expect(results['./tools.cjs']).to.deep.equal({ names: ['cjs_cjs'] });
    expect(results['./commonjs.js']).to.deep.equal({ names: ['cjs_js'] });
    expect(results['./tools.js,./tools.cjs']).to.deep.equal({ names: ['esm_js', 'cjs_cjs'] });
  });

  it('a file that cannot load names itself and the fix (issue 31)', async () => {
    const results = await load(project, ['./imports-helper.mjs', './esm/commonjs.js']);
    // An ES module importing a .js helper written as ESM in the CommonJS package: the helper fails.
    expect(results['./imports-helper.mjs']?.error).to.match(
      /^MCPT_TOOLS: could not load '\.\/imports-helper\.mjs' \(.*imports-helper\.mjs\): .*rename it to \.mjs, or add "type": "module" to the package\.json/s,
    );
    expect(results['./esm/commonjs.js']?.error).to.match(
      /^MCPT_TOOLS: could not load '\.\/esm\/commonjs\.js' \(.*commonjs\.js\): .*is not defined in ES module scope.*rename it to \.cjs, or write it with import\/export/s,
    );
  });
});
