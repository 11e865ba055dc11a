import { expect } from 'chai';
import {
  cancelledSettlement,
  ErrorCode,
  plainResultOf,
  ProtocolError,
  RELATED_TASK_META_KEY,
  resultOf,
  settleWithError,
  settleWithResult,
  type TaskRecord,
} from '@mcp-tasks/protocol';

function record(partial: Partial<TaskRecord>): TaskRecord {
  return {
    taskId: 't-1',
    kind: 'task',
    status: 'completed',
    createdAt: 0,
    lastUpdatedAt: 0,
    ttl: 1000,
    pollInterval: 1000,
    owner: 'o',
    sessionId: 's',
    tool: 'x',
    ...partial,
  };
}

describe('result mapping', () => {
  it('T-LIFE-4: a result with isError: true fails the task; other results complete it', () => {
    expect(settleWithResult({ content: [{ type: 'text', text: 'ok' }] }).status).to.equal('completed');
    const failed = settleWithResult({ content: [{ type: 'text', text: 'rate limit' }], isError: true });
    expect(failed.status).to.equal('failed');
  });

  it('T-LIFE-5: a failure carries a diagnostic statusMessage', () => {
    expect(settleWithResult({ content: [{ type: 'text', text: 'rate limit' }], isError: true }).statusMessage).to.equal(
      'Tool execution failed: rate limit',
    );
    expect(settleWithError('crash', new Error('boom')).statusMessage).to.equal("Tool 'crash' failed: boom");
    expect(
      settleWithResult({ content: [{ type: 'text', text: 'x'.repeat(5000) }], isError: true }).statusMessage.length,
    ).to.be.at.most(500);
  });

  it('T-LIFE-4: a thrown error fails the task with the JSON-RPC error a plain call answers', () => {
    const settled = settleWithError('crash', new Error('boom'));
    expect(settled.outcome).to.deep.equal({
      error: { code: ErrorCode.InternalError, message: "Tool 'crash' failed: boom", data: { tool: 'crash' } },
    });
    const protocol = settleWithError('x', new ProtocolError(ErrorCode.InvalidParams, 'bad city'));
    expect(protocol.outcome).to.deep.equal({ error: { code: -32602, message: 'bad city' } });
  });

  it('T-RES-1, T-RES-3: tasks/result answers the stored result plus the related-task _meta', () => {
    const result = { content: [{ type: 'text', text: 'hi' }], _meta: { mine: 1 } };
    expect(resultOf(record({ outcome: { result } }))).to.deep.equal({
      content: [{ type: 'text', text: 'hi' }],
      _meta: { mine: 1, [RELATED_TASK_META_KEY]: { taskId: 't-1' } },
    });
    expect(plainResultOf(record({ outcome: { result } }))).to.deep.equal(result);
  });

  it('T-RES-1: tasks/result of an errored task throws the same JSON-RPC error, associated with the task', () => {
    const error = { code: -32603, message: "Tool 'crash' failed: boom", data: { tool: 'crash' } };
    try {
      resultOf(record({ status: 'failed', outcome: { error } }));
      expect.fail('should throw');
    } catch (thrown) {
      expect(thrown).to.be.instanceOf(ProtocolError);
      const wire = (thrown as ProtocolError).toJSON();
      expect(wire.code).to.equal(error.code);
      expect(wire.message).to.equal(error.message);
      expect(wire.data).to.deep.equal({ tool: 'crash', _meta: { [RELATED_TASK_META_KEY]: { taskId: 't-1' } } });
    }
  });

  it('T-CANCEL-2: a cancelled task answers a request-cancelled error', () => {
    const settled = cancelledSettlement();
    expect(settled.status).to.equal('cancelled');
    expect(() => resultOf(record({ status: 'cancelled', outcome: settled.outcome })))
      .to.throw(ProtocolError)
      .with.property('code', ErrorCode.RequestCancelled);
  });
});
