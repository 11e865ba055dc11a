// The demo tools (`crash` included) are served only when asked for (issue 31): a worker with no tools, no upstreams
// and no --demo refuses to start and says what to set; `--demo` or MCPT_DEMO=1 serves them.
import { expect } from 'chai';
import { loadWorkerConfig, servedSources } from '@mcp-tasks/worker';
import { spawnService } from '../support/processes.ts';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';

describe('the demo tools only with an explicit opt-in (issue 31)', function () {
  this.timeout(60_000);

  const worker = async (env: Record<string, string>, args: string[] = []) =>
    spawnService(
      'worker',
      '',
      { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: uniquePrefix(), ...env },
      /worker ready/,
      {
        args: ['--import', 'tsx', 'apps/worker/src/main.ts', ...args],
      },
    );

  it('servedSources: nothing configured is refused, naming MCPT_TOOLS, the upstreams and --demo (issue 31)', async () => {
    const config = loadWorkerConfig({});
    expect(config.MCPT_DEMO).to.equal(false);
    let refusal: Error | undefined;
    await servedSources(config, {}).catch((error: Error) => (refusal = error));
    expect(refusal?.message).to.match(/MCPT_TOOLS=.*UPSTREAM_MCP_COMMAND, UPSTREAM_MCP_URL or MCPT_UPSTREAMS.*--demo/s);
    expect(() => loadWorkerConfig({ MCPT_DEMO: 'yes' })).to.throw(/MCPT_DEMO/);
  });

  it('servedSources: MCPT_DEMO=1 serves the demo tools, beside MCPT_TOOLS when both are set (issue 31)', async () => {
    const demo = await servedSources(loadWorkerConfig({ MCPT_DEMO: '1' }), {});
    expect(demo.tools.map((tool) => tool.name)).to.include.members(['wait', 'crash']);
    const both = await servedSources(loadWorkerConfig({ MCPT_DEMO: '1' }), {
      MCPT_TOOLS: './test/fixtures/catalog/gamma.ts',
    });
    expect(both.tools.map((tool) => tool.name)).to.include.members(['wait', 'gamma']);
    const own = await servedSources(loadWorkerConfig({}), { MCPT_TOOLS: './test/fixtures/catalog/gamma.ts' });
    expect(own.tools.map((tool) => tool.name)).to.deep.equal(['gamma']);
  });

  it('a worker process with nothing to serve exits 1 with the message; with --demo it serves the demo tools (issue 31)', async () => {
    const refused = await worker({}).then(
      async (started) => {
        await started.stop();
        return '';
      },
      (error: Error) => error.message,
    );
    expect(refused).to.match(/exited with 1 before it was ready/);
    expect(refused).to.match(/A worker needs tools to serve, and none is configured: set MCPT_TOOLS=/);
    const demo = await worker({}, ['--demo']);
    const ready = demo.records().find((record) => record['message'] === 'worker ready');
    expect(ready?.['tools']).to.include.members(['wait', 'crash']);
    await demo.stop();
  });
});
