// Root hooks: after every test file's resources should be released; anything left open fails the run.
import { stopSharedRedis } from './redis-server.ts';
import { releaseLeftovers } from './resources.ts';

/** How long the process may live on after the last hook before the watchdog says what holds it and fails. */
const EXIT_GRACE_MS = 30_000;

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    await stopSharedRedis();
    const leftovers = await releaseLeftovers();
    // mocha runs without --exit so that a leak shows. Should something we did not track still hold the event loop
    // (a child process, a socket, a timer), name it and fail, rather than leave CI waiting on a finished run.
    setTimeout(() => {
      const holders = process.getActiveResourcesInfo().filter((kind) => kind !== 'Timeout');
      console.error(
        `the tests ended ${EXIT_GRACE_MS / 1000} s ago, but these still hold the process: ${holders.join(', ')}`,
      );
      process.exit(1);
    }, EXIT_GRACE_MS).unref();
    if (leftovers.length > 0) {
      throw new Error(`Tests left resources open (released now): ${leftovers.join(', ')}`);
    }
  },
};
