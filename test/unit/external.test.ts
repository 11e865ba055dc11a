// External tools without I/O: callback tokens, reconciliation of tasks that wait on external work, the mapping of an
// external consumer's return value, and the demo tool's configuration error.
import { expect } from 'chai';
import { signCallbackToken, verifyCallbackToken } from '@mcp-tasks/engine';
import {
  isExternalTool,
  queueOfTool,
  reconcile,
  settleWithJobFailure,
  settleWithJobReturn,
  TaskStatus,
} from '@mcp-tasks/protocol';
import { toolRegistry } from '@mcp-tasks/tools';

const SECRET = 'a-test-secret-of-at-least-32-characters!';

describe('external tools (pure parts)', () => {
  describe('callback tokens', () => {
    const now = 1_700_000_000_000;
    const token = signCallbackToken(SECRET, 'task-a', now + 60_000);

    it('verifies for its task until its expiry', () => {
      expect(verifyCallbackToken(SECRET, token, 'task-a', now)).to.deep.equal({ ok: true, expiresAt: now + 60_000 });
      expect(verifyCallbackToken(SECRET, token, 'task-a', now + 60_000)).to.deep.equal({
        ok: false,
        problem: 'expired',
      });
    });

    it('is bound to the task id, the expiry and the secret', () => {
      expect(verifyCallbackToken(SECRET, token, 'task-b', now)).to.deep.equal({ ok: false, problem: 'signature' });
      const [v, exp, mac] = token.split('.');
      expect(verifyCallbackToken(SECRET, `${v}.${Number(exp) + 1}.${mac}`, 'task-a', now)).to.deep.include({
        ok: false,
      });
      expect(verifyCallbackToken(`${SECRET}x`, token, 'task-a', now)).to.deep.include({ problem: 'signature' });
    });

    it('rejects malformed tokens', () => {
      for (const bad of ['', 'v1', 'v2.1.abc', 'v1.x.abc', 'v1.1.2.3']) {
        expect(verifyCallbackToken(SECRET, bad, 'task-a', now)).to.deep.equal({ ok: false, problem: 'malformed' });
      }
    });
  });

  describe('reconciliation', () => {
    it('leaves a task waiting for a callback alone when its job is gone or finished', () => {
      const record = { status: TaskStatus.Working, external: { mode: 'callback' as const } };
      expect(reconcile(record, 'unknown').action).to.equal('none');
      expect(reconcile(record, 'completed').action).to.equal('none');
      expect(reconcile(record, 'failed', 'boom').action).to.equal('fail');
    });

    it("adopts the outcome of a queue tool's finished job, and fails it only when the job is gone", () => {
      const record = { status: TaskStatus.Working, external: { mode: 'queue' as const, queue: 'ext-shout' } };
      expect(reconcile(record, 'completed').action).to.equal('adopt');
      expect(reconcile(record, 'failed', 'boom').action).to.equal('adopt');
      expect(reconcile(record, 'waiting').action).to.equal('none');
      expect(reconcile(record, 'active').action).to.equal('none');
      expect(reconcile(record, 'unknown').action).to.equal('fail');
      expect(reconcile({ ...record, status: TaskStatus.Completed }, 'completed').action).to.equal('none');
    });

    it('still fails a polled task whose job vanished (nobody polls it any more)', () => {
      expect(reconcile({ status: TaskStatus.Working, external: { mode: 'poll' } }, 'unknown').action).to.equal('fail');
      expect(reconcile({ status: TaskStatus.Working, external: { mode: 'poll' } }, 'delayed').action).to.equal('none');
    });
  });

  describe("an external consumer's return value (contract v1)", () => {
    const result = { content: [{ type: 'text', text: 'ok' }] };

    it('maps a CallToolResult object or its JSON text like our own tools', () => {
      expect(settleWithJobReturn('t', result)).to.deep.include({ status: 'completed', outcome: { result } });
      expect(settleWithJobReturn('t', JSON.stringify(result))).to.deep.include({ status: 'completed' });
      const failed = settleWithJobReturn('t', { ...result, isError: true });
      expect(failed).to.deep.include({ status: 'failed', statusMessage: 'Tool execution failed: ok' });
    });

    it('fails the task on anything else, saying what was wrong', () => {
      for (const bad of [undefined, null, 'text', 42, { text: 'x' }]) {
        const settlement = settleWithJobReturn('t', bad);
        expect(settlement.status).to.equal('failed');
        expect(settlement.statusMessage).to.match(/^Tool 't' failed: its external consumer returned an invalid/);
      }
    });

    it('maps a failedReason to the -32603 error a thrown tool error gives', () => {
      expect(settleWithJobFailure('t', 'boom').outcome).to.deep.equal({
        error: { code: -32603, message: "Tool 't' failed: boom", data: { tool: 't' } },
      });
    });
  });

  describe('demo tools', () => {
    it('batch_report is external and shout is served from queue ext-shout', () => {
      expect(isExternalTool(toolRegistry.get('batch_report'))).to.equal(true);
      expect(queueOfTool(toolRegistry.get('shout'))).to.equal('ext-shout');
      expect(queueOfTool(toolRegistry.get('wait'))).to.equal(undefined);
    });

    it('batch_report without BATCH_SYSTEM_URL fails with a message that says what to set', async () => {
      const tool = toolRegistry.get('batch_report');
      if (!isExternalTool(tool)) throw new Error('not external');
      const saved = process.env['BATCH_SYSTEM_URL'];
      delete process.env['BATCH_SYSTEM_URL'];
      try {
        const context = { taskId: 'x', signal: new AbortController().signal, log: console };
        await tool.external.submit({ rows: 1 }, context).then(
          () => expect.fail('expected an error'),
          (error: Error) => expect(error.message).to.match(/^BATCH_SYSTEM_URL is not set/),
        );
      } finally {
        if (saved !== undefined) process.env['BATCH_SYSTEM_URL'] = saved;
      }
    });
  });
});
