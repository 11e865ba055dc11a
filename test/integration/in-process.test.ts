// The fast tier's harness itself (test/support/in-process.ts): apis and workers inside the test's process, each
// one's output in its own logs (the tests that read a worker's lines depend on it), none printed, and a handle that
// refuses to be killed rather than pretend it was.
import { expect } from 'chai';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

describe('the in-process tier: api and worker inside the test’s process (test/support/in-process.ts)', function () {
  this.timeout(60_000);
  let system: System;

  before(async () => {
    system = await startSystem({ apis: 2, workers: 2 });
  });
  after(async () => {
    await system?.stop();
  });

  it('each service’s lines land in its own logs: a task settled by one worker is in its records only', async () => {
    const client = await McpTestClient.connect(String(system.apis[1]?.url));
    const taskId = String((await client.createTask('wait', { seconds: 0 }))['taskId']);
    await client.call('tasks/result', { taskId });
    const settledBy = () =>
      system.workers.filter((worker) =>
        worker.records().some((r) => r['message'] === 'task settled' && r['taskId'] === taskId),
      );
    await eventually(() => (settledBy().length > 0 ? true : undefined));
    expect(settledBy()).to.have.length(1);
    for (const [i, api] of system.apis.entries()) {
      expect(api.records().every((r) => r['service'] === 'api')).to.equal(true);
      expect(
        api.records().some((r) => String(r['message']).startsWith('listening on')),
        `api ${i}`,
      ).to.equal(true);
    }
    // The audit record of the creation is the api's that served it, not the other's.
    const created = (i: number) =>
      system.apis[i]?.records().some((r) => r['event'] === 'task.created' && r['taskId'] === taskId);
    expect([created(0), created(1)]).to.deep.equal([false, true]);
    for (const worker of system.workers) {
      expect(worker.records().every((r) => r['service'] === 'worker')).to.equal(true);
    }
  });

  it('stop() closes a worker as SIGTERM would (it says so); a signal a process would die of is refused', async () => {
    const worker = await system.addWorker();
    try {
      let refused: unknown;
      await worker.stop('SIGKILL').catch((error: unknown) => (refused = error));
      expect(String(refused)).to.match(/cannot take SIGKILL: start it with test\/support\/processes\.ts/);
      expect(worker.alive()).to.equal(true);
    } finally {
      expect(await worker.stop()).to.equal(0);
    }
    expect(worker.alive()).to.equal(false);
    expect(worker.records().some((r) => r['message'] === 'shutting down' && r['signal'] === 'SIGTERM')).to.equal(true);
  });
});
