// Task handles without I/O (docs/clients.md): the handle tools' arguments and results (protocol handles.ts), and the
// keep-alive progress that keeps a waiting call's request alive (api progress-keepalive.ts).
import { expect } from 'chai';
import {
  ErrorCode,
  handleStartedResult,
  handleStatusResult,
  HandleTool,
  HandleToolNames,
  handleToolListing,
  InvalidInputError,
  parseHandleArguments,
  RELATED_TASK_META_KEY,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import { ProgressKeepAlive } from '@mcp-tasks/api/progress-keepalive';
import { loadApiConfig } from '@mcp-tasks/api/config';

function record(partial: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: '6d975d92-fe4d-44e6-a9fc-df292b1f6493',
    kind: 'task',
    status: 'working',
    statusMessage: 'Running on worker-1.',
    createdAt: 0,
    lastUpdatedAt: 10,
    ttl: 3_600_000,
    pollInterval: 1000,
    owner: 'session:s',
    sessionId: 's',
    tool: 'render',
    ...partial,
  };
}

describe('task handles: the handle tools and their results (protocol)', () => {
  const names = new HandleToolNames('task_');

  it('names the four tools with the prefix, and knows them back', () => {
    expect(handleToolListing(names).map((tool) => tool['name'])).to.deep.equal([
      'task_answer',
      'task_cancel',
      'task_result',
      'task_status',
    ]);
    expect(new HandleToolNames('jobs.').of(HandleTool.Status)).to.equal('jobs.status');
    expect(names.toolOf('task_cancel')).to.equal(HandleTool.Cancel);
    expect(names.toolOf('task_other')).to.equal(undefined);
    for (const tool of handleToolListing(names)) expect(tool['execution']).to.deep.equal({ taskSupport: 'forbidden' });
  });

  it('refuses arguments its listing does not declare with a -32602 that says which', () => {
    expect(parseHandleArguments(HandleTool.Status, 'task_status', { taskId: 'a' })).to.deep.equal({
      tool: 'status',
      taskId: 'a',
    });
    for (const args of [{}, { taskId: '' }, { taskId: 7 }, { taskId: 'a', extra: 1 }, undefined]) {
      expect(() => parseHandleArguments(HandleTool.Status, 'task_status', args), JSON.stringify(args))
        .to.throw(InvalidInputError)
        .with.property('message')
        .that.match(/^Invalid arguments for tool 'task_status': /);
    }
    expect(() =>
      parseHandleArguments(HandleTool.Answer, 'task_answer', { taskId: 'a', inputResponses: { k: 'yes' } }),
    ).to.throw(/inputResponses\.k/);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, {}]));
    expect(() =>
      parseHandleArguments(HandleTool.Answer, 'task_answer', { taskId: 'a', inputResponses: many }),
    ).to.throw(/at most 64/);
  });

  it('the handle: words a model can act on, and the task id, status and poll interval in structuredContent', () => {
    const handle = handleStartedResult({ record: record() }, names);
    const text = (handle['content'] as { text: string }[])[0]?.text;
    expect(text).to.match(/^Started task 6d975d92-\S+: tool 'render' is still running/);
    expect(text).to.contain(
      'Call `task_status` with {"taskId":"6d975d92-fe4d-44e6-a9fc-df292b1f6493"} about every 1 s',
    );
    expect(handle['structuredContent']).to.deep.include({
      taskId: '6d975d92-fe4d-44e6-a9fc-df292b1f6493',
      status: 'working',
      pollInterval: 1000,
      ttl: 3_600_000,
    });
    expect(handle['_meta']).to.deep.equal({
      [RELATED_TASK_META_KEY]: { taskId: '6d975d92-fe4d-44e6-a9fc-df292b1f6493' },
    });
  });

  it('the status: progress while running, the question while input_required, the result inline once ended', () => {
    const running = handleStatusResult({ record: record(), progress: { progress: 2, total: 4 } }, names);
    expect(running['structuredContent']).to.deep.include({ progress: { progress: 2, total: 4 } });
    const inputs = { 'req-1': { method: 'elicitation/create', params: { message: 'Which colour?' } } };
    const asking = handleStatusResult({ record: record({ status: 'input_required' }), inputs }, names);
    expect(asking['structuredContent']).to.deep.include({ status: 'input_required', inputRequests: inputs });
    expect((asking['content'] as { text: string }[])[0]?.text).to.contain(
      '- key "req-1", elicitation/create: Which colour?',
    );
    // Every question answered, the worker not resumed yet: shown working, as the 2026-07-28 tasks/get shows it.
    expect(
      handleStatusResult({ record: record({ status: 'input_required' }), inputs: {} }, names)['structuredContent'],
    ).to.deep.include({ status: 'working' });
    const result = { content: [{ type: 'text', text: 'done' }], structuredContent: { n: 1 } };
    const completed = handleStatusResult({ record: record({ status: 'completed', outcome: { result } }) }, names);
    expect(completed['content']).to.deep.equal([
      {
        type: 'text',
        text: "Task 6d975d92-fe4d-44e6-a9fc-df292b1f6493 (tool 'render') is completed: Running on worker-1. Its result follows.",
      },
      { type: 'text', text: 'done' },
    ]);
    expect(completed['structuredContent']).to.deep.include({ result });
    const error = { code: ErrorCode.InternalError, message: "Tool 'render' failed: boom" };
    const failed = handleStatusResult({ record: record({ status: 'failed', outcome: { error } }) }, names);
    expect(failed['structuredContent']).to.deep.include({ status: 'failed', error });
    // A handle sent again for a task that has ended since says what became of it.
    expect(handleStartedResult({ record: record({ status: 'completed', outcome: { result } }) }, names)).to.deep.equal(
      completed,
    );
  });
});

describe('task handles: keep-alive progress (api)', () => {
  it('sends a notification after each quiet spell, every value above the last one sent, the tool’s included', () => {
    const keepAlive = new ProgressKeepAlive('tok', 1000, 0);
    expect(keepAlive.dueIn(400)).to.equal(600);
    expect(keepAlive.dueIn(1000)).to.equal(0);
    const first = keepAlive.next(1000)['params'] as Record<string, unknown>;
    expect(first).to.deep.equal({ progressToken: 'tok', progress: 0, message: 'Still running after 1 s.' });
    // The tool reports 0 too: raised above what was sent, not dropped.
    const tool = keepAlive.forwarded(
      {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 'tok', progress: 0, total: 4, message: 'step 0' },
      },
      1500,
    );
    const values = [0, (tool['params'] as { progress: number }).progress];
    expect(keepAlive.dueIn(2000)).to.equal(500);
    const again = keepAlive.next(2500)['params'] as Record<string, unknown>;
    expect(again).to.include({ total: 4, message: 'step 0' });
    values.push(again['progress'] as number);
    const later = keepAlive.forwarded(
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok', progress: 1, total: 4 } },
      2600,
    );
    expect((later['params'] as { progress: number }).progress, 'a value above the last passes unchanged').to.equal(1);
    values.push(1);
    for (let i = 1; i < values.length; i++) expect(values[i]).to.be.above(values[i - 1] as number);
    // Anything else passes as it is.
    const other = { jsonrpc: '2.0', method: 'elicitation/create', id: 'x', params: {} };
    expect(keepAlive.forwarded(other)).to.equal(other);
  });

  it('settings: TASK_HANDLES on by default, HANDLE_AFTER_MS 10 s, PROGRESS_KEEPALIVE_MS 10 s, the prefix task_', () => {
    const config = loadApiConfig({});
    expect(config).to.include({
      TASK_HANDLES: true,
      HANDLE_AFTER_MS: 10_000,
      PROGRESS_KEEPALIVE_MS: 10_000,
      TASK_HANDLE_TOOL_PREFIX: 'task_',
    });
    expect(loadApiConfig({ TASK_HANDLES: 'off' }).TASK_HANDLES).to.equal(false);
    expect(() => loadApiConfig({ TASK_HANDLES: 'yes' })).to.throw(/TASK_HANDLES=/);
    expect(() => loadApiConfig({ TASK_HANDLE_TOOL_PREFIX: 'a b' })).to.throw(/TASK_HANDLE_TOOL_PREFIX=/);
  });
});
