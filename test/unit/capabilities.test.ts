import { expect } from 'chai';
import {
  boundedClientInfo,
  CLIENT_INFO_MAX_CHARS,
  negotiateProtocolVersion,
  serverCapabilities,
  supportsTasks,
  usedClientCapabilities,
} from '@mcp-tasks/protocol';

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

describe('what a session keeps of initialize', () => {
  it('T-SEC-3: only the client capabilities the runner acts on, each reduced to the keys it reads', () => {
    const declared = {
      elicitation: { form: {}, url: { big: 'x'.repeat(100_000) }, other: {} },
      sampling: null,
      roots: { listChanged: true },
      experimental: { blob: 'y'.repeat(100_000) },
      tasks: {
        list: {},
        cancel: { deep: { deeper: 'z'.repeat(1000) } },
        requests: { elicitation: { create: {} }, sampling: { createMessage: 'odd' }, tools: { call: {} } },
      },
    };
    expect(usedClientCapabilities(declared)).to.deep.equal({
      elicitation: { form: {}, url: {} },
      sampling: {},
      // ctx.listRoots() asks for the roots: the runner acts on `roots` too.
      roots: { listChanged: {} },
      tasks: { cancel: {}, requests: { elicitation: { create: {} }, sampling: { createMessage: {} } } },
    });
    expect(usedClientCapabilities({})).to.deep.equal({});
    expect(usedClientCapabilities({ tasks: 'not an object' })).to.deep.equal({ tasks: {} });
  });

  it(`T-SEC-3: clientInfo keeps name, version and title, each cut to ${CLIENT_INFO_MAX_CHARS} characters`, () => {
    const info = { name: 'n'.repeat(5000), version: '1.0', title: 't'.repeat(200), icons: [{ src: 'x' }], extra: 1 };
    expect(boundedClientInfo(info)).to.deep.equal({
      name: 'n'.repeat(CLIENT_INFO_MAX_CHARS),
      version: '1.0',
      title: 't'.repeat(CLIENT_INFO_MAX_CHARS),
    });
    expect(boundedClientInfo({ name: 'a', version: 'b', title: 3 })).to.deep.equal({ name: 'a', version: 'b' });
  });
});
