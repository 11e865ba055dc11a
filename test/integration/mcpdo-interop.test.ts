// Interop with MCP Inspector's terminal client `mcpdo` (2.12), code we did not write, against real api and worker
// processes on the 2025-11-25 era: a task call with progress, tasks/list, tasks/get, tasks/cancel, and an
// elicitation answered. mcpdo keeps one call in flight per connection, so cancel and get of a running task go
// through a second connection of the same principal (an API key), as a second terminal would.
// The 2026-07-28 era (mcpdo --era modern) is in mcpdo-modern.test.ts.
import { expect } from 'chai';
import { startSystemWithMcpdo, succeeded, type Mcpdo } from '../support/mcpdo.ts';
import { DOWNLOADS_TAG } from '../../scripts/lib/downloads.ts';
import { eventually } from '../support/mcp-client.ts';
import { startSystem, type System } from '../support/processes.ts';

const KEY = 'alice-key-0123456789abcdef';
const AUTH = `Authorization: Bearer ${KEY}`;

interface WireTask {
  taskId: string;
  status: string;
  statusMessage?: string;
}

describe(`MCP Inspector mcpdo 2.12 against our api (2025-11-25 era) ${DOWNLOADS_TAG}`, function () {
  this.timeout(120_000);
  let system: System;
  let mcpdo: Mcpdo;

  before(async function () {
    this.timeout(300_000); // the first run downloads Node 22 and the Inspector
    ({ system, mcpdo } = await startSystemWithMcpdo(
      startSystem({ env: { AUTH_API_KEYS: `alice:${KEY}` } }),
      'legacy',
      AUTH,
    ));
  });
  after(async () => {
    await mcpdo?.close();
    await system?.stop();
  });

  const ok = succeeded;
  const relatedTask = (result: Record<string, unknown>): string =>
    String((result['_meta'] as Record<string, { taskId?: string }>)['io.modelcontextprotocol/related-task']?.taskId);

  it('connects on 2025-11-25 and lists our tools with their task support, as a client without capabilities.tasks sees it', async () => {
    const tools = ok(await mcpdo.run(['@runner', 'tools/list']))['tools'] as { name: string; execution?: unknown }[];
    // mcpdo task-augments calls without declaring capabilities.tasks at initialize: its session is offered task
    // handles too (docs/clients.md), so a tool that requires a task is listed optional (a plain call of it is served
    // through a handle), and the handle tools are listed. Its task calls are as before (below).
    const primes = tools.find((tool) => tool.name === 'count_primes');
    expect(primes).to.deep.include({ execution: { taskSupport: 'optional' } });
    expect(tools.map((tool) => tool.name)).to.include.members(['wait', 'ask_user', 'task_status', 'task_result']);
  });

  it('T-PROG-1, T-RES-1: tools/call --task count_primes with a progressToken: progress is relayed, the result arrives and tasks/get says completed', async () => {
    const result = ok(
      await mcpdo.run([
        '@runner',
        'tools/call',
        'count_primes',
        'below:=30000000',
        '--task',
        '--metadata',
        'progressToken=mcpdo-progress-1',
      ]),
    );
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'There are 1857859 primes below 30000000.' }]);
    const taskId = relatedTask(result);
    expect(taskId).to.be.a('string');
    // Our side of progress: the task kept mcpdo's token, and its notifications went to mcpdo's session with it.
    const record = await system.redis.hgetall(`${system.prefix}:task:${taskId}`);
    expect(record['progressToken']).to.equal('"mcpdo-progress-1"');
    const events = await system.redis.xrange(`${system.prefix}:session:${record['sessionId']}:events`, '-', '+');
    const progress = events
      .map(([, fields]) => fields[fields.indexOf('message') + 1] ?? '')
      .filter((message) => message.includes('notifications/progress'))
      .map((message) => JSON.parse(message) as { params: { progressToken: string; progress: number } });
    expect(progress.length).to.be.greaterThan(0);
    expect(progress.every((note) => note.params.progressToken === 'mcpdo-progress-1')).to.equal(true);

    const got = ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', taskId]))['task'] as WireTask;
    expect(got).to.include({ taskId, status: 'completed' });
    const listed = ok(await mcpdo.run(['@ops', 'tasks/list']))['tasks'] as WireTask[];
    expect(listed.map((task) => task.taskId)).to.include(taskId);
  });

  it('T-CANCEL-2: a running task seen by tasks/get and cancelled with tasks/cancel from a second connection; the call ends cancelled', async () => {
    const call = mcpdo.run(['@runner', 'tools/call', 'wait', 'seconds:=60', '--task'], 90_000);
    const running = await eventually(async () => {
      const tasks = (ok(await mcpdo.run(['@ops', 'tasks/list']))['tasks'] as WireTask[]) ?? [];
      return tasks.find((task) => task.status === 'working');
    }, 30_000);
    const got = ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', running.taskId]))['task'] as WireTask;
    expect(got.status).to.equal('working');
    const cancelled = ok(await mcpdo.run(['@ops', 'tasks/cancel', '--task-id', running.taskId]));
    expect(cancelled).to.include({ cancelled: true, taskId: running.taskId });
    const ended = await call;
    expect(ended.code).to.not.equal(0);
    expect(ended.stdout + ended.stderr).to.match(/Tool call \W{1,2}wait\W{1,2} was cancelled/);
    const after = ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', running.taskId]))['task'] as WireTask;
    expect(after.status).to.equal('cancelled');
  });

  it('T-INPUT-1, T-INPUT-3: an elicitation of a task reaches mcpdo, is answered with elicitation/respond, and the task completes with the answer', async () => {
    const asked = ok(
      await mcpdo.run(['@runner', 'tools/call', 'ask_user', '{"question":"Favourite colour?"}', '--task']),
    );
    const pending = asked['elicitationPending'] as { elicitationId: string; message: string; mode: string };
    expect(pending).to.include({ message: 'Favourite colour?', mode: 'form' });
    const answered = ok(await mcpdo.run(['@runner', 'elicitation/respond', pending.elicitationId, 'answer:=teal']));
    expect(answered['content']).to.deep.equal([{ type: 'text', text: 'teal' }]);
    const taskId = relatedTask(answered);
    const got = ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', taskId]))['task'] as WireTask;
    expect(got.status).to.equal('completed');
  });
});
