// The test support's process-wide state: mocha requires the root hook's modules, but loads a test file that needs
// ESM-only packages through import(), which gives that file its own instance of every support module.
import { expect } from 'chai';
import type * as resources from '../support/resources.ts';
import { track, trackedNames } from '../support/resources.ts';

describe('test support', () => {
  it('a resource tracked through a second instance of resources.ts is seen by the first (no hidden leaks)', async () => {
    // A query string makes the loader evaluate the module again, as a file loaded through import() does.
    const specifier = '../support/resources.ts?another-instance';
    const second = (await import(specifier)) as typeof resources;
    let released = false;
    const release = second.track('resource of another instance', () => {
      released = true;
    });
    // Only this test's own resource is released: the root hook's shared ones (a test Redis) stay in use.
    expect(trackedNames()).to.include('resource of another instance');
    await release();
    expect(released).to.equal(true);
    expect(trackedNames()).not.to.include('resource of another instance');
    const own = track('released by its owner', () => undefined);
    expect(second.trackedNames()).to.include('released by its owner');
    await own();
    expect(second.trackedNames()).not.to.include('released by its owner');
  });
});
