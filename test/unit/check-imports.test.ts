// scripts/check-imports.mjs, run by `pnpm lint`: no import cycle (type-only imports included), no upward import, and
// no Redis client outside the engine.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';

function check(root?: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, ['scripts/check-imports.mjs', ...(root ? ['--root', root] : [])], {
    encoding: 'utf8',
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('import rules (scripts/check-imports.mjs, part of pnpm lint)', function () {
  this.timeout(60_000);

  it('the repository passes: no cycle, every import points down', () => {
    const { status, output } = check();
    expect(output).to.contain('no cycle, every import points down');
    expect(status).to.equal(0);
  });

  it('fails on a cycle even when one of its imports is type-only, naming the files', () => {
    const { status, output } = check('test/fixtures/imports/cycle');
    expect(status).to.equal(1);
    expect(output).to.contain('import cycle of 2 modules');
    expect(output).to.contain('packages/engine/src/keys.ts -> packages/engine/src/store.ts');
  });

  it('fails on a package importing an app, on a use case or its services importing a wire, on a wire importing another', () => {
    const { status, output } = check('test/fixtures/imports/upward');
    expect(status).to.equal(1);
    const wire = 'apps/api/src/wires/rev2025-11-25/serve.ts';
    expect(output).to.contain(`upward import: packages/engine/src/engine.ts -> ${wire}`);
    expect(output).to.contain(`upward import: apps/api/src/calls/start.ts -> ${wire}`);
    expect(output).to.contain(
      `upward import: apps/api/src/wires/rev2026-07-28/serve.ts -> ${wire} ` +
        `(apps/api/src/wires/rev2026-07-28/ must not import ${wire}: a wire never imports another wire)`,
    );
    // The use cases read context.ts: through it they would learn a wire.
    expect(output).to.contain(
      'upward import: apps/api/src/context.ts -> apps/api/src/wires/rev2026-07-28/serve.ts (apps/api/src/context.ts ' +
        'must not import apps/api/src/wires/rev2026-07-28/serve.ts: the use cases read it, and they never learn ' +
        'which revision asked)',
    );
  });

  it('fails on ioredis imported outside packages/engine, a type-only import included', () => {
    const { status, output } = check('test/fixtures/imports/redis');
    expect(status).to.equal(1);
    expect(output).to.contain('apps/api/src/calls/plain.ts imports ioredis: only packages/engine/ may');
    expect(output).to.not.contain('packages/engine/src/redis.ts imports');
  });
});
