// What a tool's context refuses before it reaches the client: nothing here touches Redis.
import { expect } from 'chai';
import type { Job } from 'bullmq';
import { LocalError, LocalErrorCode, type TaskRecord } from '@mcp-tasks/protocol';
import type { Logger, ToolJobData } from '@mcp-tasks/engine';
import { createToolContext, type ContextDeps } from '@mcp-tasks/worker/internals';

describe('tool context', () => {
  // Deps that fail the test once the context is made: a refused request must not reach the session, the broker or
  // the store.
  let armed = false;
  const untouched = new Proxy({} as ContextDeps, {
    get: (_target, name) => {
      if (armed) throw new Error(`the context used deps.${String(name)}`);
      return undefined;
    },
  });
  const context = createToolContext(
    untouched,
    { taskId: 'task-1' } as TaskRecord,
    { attemptsMade: 0, stalledCounter: 0 } as unknown as Job<ToolJobData>,
    new AbortController().signal,
    {} as Logger,
    undefined,
    {
      checkpoint: () => Promise.resolve(),
      lastCheckpoint: undefined,
      step: (_name, fn) => Promise.resolve(fn()),
      callTool: () => Promise.reject(new Error('no children here')),
      sleep: () => Promise.reject(new Error('no waits here')),
      sleepUntil: () => Promise.reject(new Error('no waits here')),
      waitForEvent: () => Promise.reject(new Error('no waits here')),
      signalTask: () => Promise.reject(new Error('no events here')),
      askParked: () => Promise.reject(new Error('no waits here')),
    },
  );
  armed = true;

  it('C26-MRTR-8: elicit() refuses URL mode and an elicitationId (input-error), so no URL-elicitation artefact reaches a client', async () => {
    for (const params of [
      { message: 'Sign in', requestedSchema: {}, mode: 'url', url: 'https://example.test/login' },
      { message: 'Sign in', requestedSchema: {}, elicitationId: 'e-1' },
    ]) {
      const refused = await context.elicit(params).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(LocalError);
      expect((refused as LocalError).code).to.equal(LocalErrorCode.InputError);
      expect((refused as LocalError).message).to.match(/form-mode requests only/);
    }
  });
});
