// The one mapping of the runner's typed errors onto each wire's JSON-RPC errors (apps/api/src/wires/errors.ts and each wire's errors.ts).
import { expect } from 'chai';
import { toWireError, wireErrorOf } from '@mcp-tasks/api/wires';
import {
  CallGoneError,
  InvalidInputError,
  InvalidStateError,
  LimitExceededError,
  ProtocolError,
  RequestCancelledError,
  TASK_NOT_FOUND,
  TaskNotFoundError,
  TaskSupportError,
  UnavailableError,
} from '@mcp-tasks/protocol';

describe('wire errors: typed errors -> JSON-RPC, per wire', () => {
  const cases: [string, Error, number, number][] = [
    ['T-ERR-1: not found', new TaskNotFoundError(), -32602, -32602],
    ['invalid input', new InvalidInputError('Unknown tool: x'), -32602, -32602],
    ['invalid state', new InvalidStateError('Cannot cancel task', 'completed'), -32602, -32602],
    [
      'a limit (C26-ERR-2: -32000 on the 2026 wire)',
      new LimitExceededError('tasks_per_owner', 3, 'Too many'),
      -32029,
      -32000,
    ],
    ['a cancelled request', new RequestCancelledError(), -32800, -32800],
    ['a gone call', new CallGoneError(), -32603, -32603],
    ['an unavailable service', new UnavailableError('Could not queue the task: x'), -32603, -32603],
    ['a wire error as it is', new ProtocolError(-32601, 'nope'), -32601, -32601],
  ];
  for (const [what, error, on2025, on2026] of cases) {
    it(`${what}: ${on2025} on 2025-11-25, ${on2026} on 2026-07-28, with the error's own message`, () => {
      expect(toWireError(error, '2025-11-25')).to.include({ code: on2025, message: error.message });
      expect(toWireError(error, '2026-07-28')).to.include({ code: on2026, message: error.message });
    });
  }

  it('T-ERR-1: not found says the same words for every cause', () => {
    expect(toWireError(new TaskNotFoundError(), '2025-11-25').message).to.equal(TASK_NOT_FOUND);
  });

  it('a limit carries what it is and its value, and what the client may act on', () => {
    const error = new LimitExceededError('principal', 10, 'Rate limit exceeded', { retryAfterMs: 200 });
    expect(toWireError(error, '2025-11-25').data).to.deep.equal({ limit: 'principal', max: 10, retryAfterMs: 200 });
  });

  it('T-TOOL-3, T-TOOL-4, X-NEG-1: a task-support refusal is -32601 with its remedy, or -32021 on 2026-07-28', () => {
    expect(toWireError(new TaskSupportError('t', 'forbidden'), '2025-11-25')).to.deep.include({
      code: -32601,
      message:
        "Tool 't' cannot be called as a task (execution.taskSupport is 'forbidden'); call it without params.task",
    });
    expect(toWireError(new TaskSupportError('t', 'required'), '2025-11-25').message).to.match(/add params\.task$/);
    expect(
      toWireError(new TaskSupportError('t', 'required'), '2025-11-25', {
        sessionHasTasks: false,
        protocolVersion: '2025-06-18',
      }).message,
    ).to.match(/need protocol 2025-11-25 \(this session negotiated 2025-06-18\)$/);
    const on2026 = toWireError(new TaskSupportError('t', 'required'), '2026-07-28');
    expect(on2026.code).to.equal(-32021);
    expect(on2026.data).to.deep.equal({
      requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    });
  });

  it('anything unforeseen is an internal error without its details', () => {
    expect(wireErrorOf(new Error('secret detail'), '2025-11-25')).to.equal(undefined);
    expect(toWireError(new Error('secret detail'), '2026-07-28')).to.deep.equal({
      code: -32603,
      message: 'Internal error; the server log has the details',
    });
  });
});
