// Root hooks: after every test file's resources should be released; anything left open fails the run.
import { stopSharedRedis } from './redis-server.ts';
import { releaseLeftovers } from './resources.ts';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    await stopSharedRedis();
    const leftovers = await releaseLeftovers();
    if (leftovers.length > 0) {
      throw new Error(`Tests left resources open (released now): ${leftovers.join(', ')}`);
    }
  },
};
