import { expect } from 'chai';
import { negotiateProtocolVersion, serverCapabilities, supportsTasks } from '@mcp-tasks/protocol';

describe('capabilities', () => {
  it('T-CAP-1, T-CAP-4: a 2025-11-25 session is told about tasks, list, cancel and task-augmented tools/call', () => {
    expect(serverCapabilities('2025-11-25', { listTasks: true })['tasks']).to.deep.equal({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
  });

  it('T-CAP-2: tasks.requests lists only tools/call, so no other request type is task-augmentable', () => {
    const tasks = serverCapabilities('2025-11-25', { listTasks: true })['tasks'] as {
      requests: Record<string, unknown>;
    };
    expect(Object.keys(tasks.requests)).to.deep.equal(['tools']);
  });

  it('T-SEC-2: tasks.list can be left out where requestors cannot be told apart', () => {
    expect(serverCapabilities('2025-11-25', { listTasks: false })['tasks']).to.not.have.property('list');
  });

  it('T-TOOL-5: older revisions get no tasks capability', () => {
    expect(supportsTasks('2025-06-18')).to.equal(false);
    expect(serverCapabilities('2025-06-18', { listTasks: true })).to.not.have.property('tasks');
  });

  it('negotiates the requested revision when supported, else the latest', () => {
    expect(negotiateProtocolVersion('2025-06-18')).to.equal('2025-06-18');
    expect(negotiateProtocolVersion('1999-01-01')).to.equal('2025-11-25');
  });
});
