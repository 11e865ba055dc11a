// The test support's process-wide state: mocha requires the root hook's modules, but loads a test file that needs
// ESM-only packages through import(), which gives that file its own instance of every support module.
import { expect } from 'chai';
import type * as resources from '../support/resources.ts';
import { releaseLeftovers, track } from '../support/resources.ts';

describe('test support', () => {
  it('a resource tracked through a second instance of resources.ts is released by the first (no hidden leaks)', async () => {
    // A query string makes the loader evaluate the module again, as a file loaded through import() does.
    const specifier = '../support/resources.ts?another-instance';
    const second = (await import(specifier)) as typeof resources;
    let released = false;
    second.track('resource of another instance', () => {
      released = true;
    });
    expect(await releaseLeftovers()).to.deep.equal(['resource of another instance']);
    expect(released).to.equal(true);
    const release = track('released by its owner', () => undefined);
    await release();
    expect(await second.releaseLeftovers()).to.deep.equal([]);
  });
});
