// Interop with MCP Inspector's terminal client `mcpdo` (2.12) on the 2026-07-28 era (`--era modern`), against real
// api and worker processes: a task call through the tasks extension, tasks/get and tasks/cancel from a second
// connection, and an elicitation of a task answered (tasks/update under the hood). mcpdo does not print the id of
// the task it follows, so the tests read it from the task records in Redis, as an operator would with mcpt.
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

describe(`MCP Inspector mcpdo 2.12 against our api (2026-07-28 era, tasks extension) ${DOWNLOADS_TAG}`, function () {
  this.timeout(120_000);
  let system: System;
  let mcpdo: Mcpdo;

  before(async function () {
    this.timeout(300_000); // the first run downloads Node 22 and the Inspector
    ({ system, mcpdo } = await startSystemWithMcpdo(
      startSystem({ env: { AUTH_API_KEYS: `alice:${KEY}` } }),
      'modern',
      AUTH,
    ));
  });
  after(async () => {
    await mcpdo?.close();
    await system?.stop();
  });

  const ok = succeeded;
  // The tasks (not plain calls) of alice: a 2026-07-28 task is in no tasks/list index, but in the operators' one.
  const tasksOfAlice = async (): Promise<string[]> => {
    const members = await system.redis.zrange(`${system.prefix}:all-tasks`, '0', '-1');
    const ids: string[] = [];
    for (const taskId of members.map((member) => member.slice(member.indexOf(':') + 1))) {
      const [kind, owner] = await system.redis.hmget(`${system.prefix}:task:${taskId}`, 'kind', 'owner');
      if (kind !== 'call' && owner === 'principal:key:alice') ids.push(taskId);
    }
    return ids;
  };
  const taskOf = (json: Record<string, unknown>): WireTask => (json['task'] ?? json) as WireTask;

  it('C26-COEX-2: connects on 2026-07-28 (server/discover, no session) and lists our tools', async () => {
    const tools = ok(await mcpdo.run(['@runner', 'tools/list']))['tools'] as { name: string }[];
    expect(tools.map((tool) => tool.name)).to.include.members(['count_primes', 'wait', 'ask_user']);
  });

  it('X-NEG-1, X-GET-1, X-GET-5: tools/call --task count_primes runs as a task of the extension; the result comes back and tasks/get says completed', async () => {
    const before = new Set(await tasksOfAlice());
    const result = ok(await mcpdo.run(['@runner', 'tools/call', 'count_primes', 'below:=3000000', '--task']));
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'There are 216816 primes below 3000000.' }]);
    const created = (await tasksOfAlice()).filter((id) => !before.has(id));
    expect(created, 'one task was created for the call').to.have.length(1);
    const got = taskOf(ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', created[0]!])));
    expect(got).to.include({ taskId: created[0], status: 'completed' });
  });

  it('X-CAN-2, X-CAN-3, X-NTF-3: a running task seen by tasks/get with its progress and cancelled with tasks/cancel from a second connection ends cancelled', async () => {
    const before = new Set(await tasksOfAlice());
    const call = mcpdo.run(['@runner', 'tools/call', 'wait', 'seconds:=60', '--task'], 90_000);
    const taskId = await eventually(async () => (await tasksOfAlice()).find((id) => !before.has(id)), 30_000);
    // Progress on this wire is the task's statusMessage (there are no progress notifications to a polling client).
    const running = await eventually(async () => {
      const got = taskOf(ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', taskId])));
      return got.status === 'working' && /^waited \d+s of 60s$/.test(got.statusMessage ?? '') ? got : undefined;
    }, 30_000);
    expect(running.statusMessage).to.match(/^waited \d+s of 60s$/);
    ok(await mcpdo.run(['@ops', 'tasks/cancel', '--task-id', taskId]));
    const ended = await call;
    expect(ended.code, 'the followed call does not succeed').to.not.equal(0);
    const after = taskOf(ok(await mcpdo.run(['@ops', 'tasks/get', '--task-id', taskId])));
    expect(after.status).to.equal('cancelled');
  });

  it('X-UPD-1, X-UPD-6: an elicitation of a task reaches mcpdo as a pending input, is answered, and the task completes with the answer', async () => {
    const asked = ok(
      await mcpdo.run(['@runner', 'tools/call', 'ask_user', '{"question":"Favourite colour?"}', '--task']),
    );
    const pending = asked['elicitationPending'] as { elicitationId: string; message: string; mode: string };
    expect(pending).to.include({ message: 'Favourite colour?', mode: 'form' });
    const answered = ok(await mcpdo.run(['@runner', 'elicitation/respond', pending.elicitationId, 'answer:=teal']));
    expect(answered['content']).to.deep.equal([{ type: 'text', text: 'teal' }]);
  });
});
