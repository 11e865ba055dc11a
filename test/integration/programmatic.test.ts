// The runner in code (the package's startWorker / startApi): an api and a worker inside the test's own process,
// handles that close everything they opened.
import { join } from 'node:path';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { createEngine } from '@mcp-tasks/engine';
import { toolQueueName } from '@mcp-tasks/protocol';
import { defineTool, startApi, startWorker, type ApiHandle, type WorkerHandle } from 'mcp-task-runner';
import { z } from 'zod';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { repoRoot } from '../support/processes.ts';
import { sharedRedisUrl, startRedisServer, uniquePrefix } from '../support/redis-server.ts';

const greet = defineTool({
  name: 'greet',
  description: 'Greets',
  inputSchema: z.object({ who: z.string() }),
  taskSupport: 'optional',
  run: ({ who }) => Promise.resolve({ content: [{ type: 'text', text: `hello ${who}` }] }),
});

describe('startWorker and startApi in one process (the package’s programmatic API)', function () {
  this.timeout(30_000);
  let worker: WorkerHandle | undefined;
  let api: ApiHandle | undefined;

  after(async () => {
    await api?.close();
    await worker?.close();
  });

  it('serves the given tools and closes through the handles', async () => {
    const redis = await sharedRedisUrl();
    const prefix = uniquePrefix();
    const env = { LOG_LEVEL: 'error' };
    worker = await startWorker({ tools: [greet], redis, prefix, concurrency: 2, env });
    api = await startApi({ redis, prefix, port: 0, env });
    expect(api.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = await McpTestClient.connect(api.url);
    const task = await client.createTask('greet', { who: 'you' });
    const result = await client.call('tasks/result', { taskId: task['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'hello you' }]);
    await api.close();
    await worker.close();
    api = undefined;
    worker = undefined;
  });

  it('serves the tools of an upstream MCP server given in code (startWorker({ upstreams }))', async () => {
    const redis = await sharedRedisUrl();
    const prefix = uniquePrefix();
    const env = { LOG_LEVEL: 'error' };
    const everything = join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    worker = await startWorker({
      tools: [],
      upstreams: [{ name: 'everything', command: process.execPath, args: [everything, 'stdio'], allow: ['echo'] }],
      redis,
      prefix,
      env,
    });
    api = await startApi({ redis, prefix, port: 0, env });
    const client = await McpTestClient.connect(api.url);
    // The worker starts at once; the upstream's tools are published as soon as it is listed (docs/gateway.md).
    const tools = await eventually(async () => {
      const listed = ((await client.call('tools/list')) as { tools: { name: string }[] }).tools;
      return listed.length > 0 ? listed : undefined;
    });
    expect(tools.map((tool) => tool.name)).to.deep.equal(['echo']);
    const task = await client.createTask('echo', { message: 'in code' });
    const result = await client.call('tasks/result', { taskId: task['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Echo: in code' }]);
    await api.close();
    await worker.close();
    api = undefined;
    worker = undefined;
  });

  it('a start refused half way (a live worker serves another definition of its tool) closes all it opened', async () => {
    const server = await startRedisServer();
    const inspect = new Redis(server.url, { maxRetriesPerRequest: null });
    const prefix = uniquePrefix();
    const engine = createEngine({ redis: inspect }, { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000 });
    try {
      // As a live worker in another process would have published it.
      await engine.catalog.publish([
        {
          name: 'greet',
          description: 'Greets in another way',
          inputSchema: { type: 'object' },
          taskSupport: 'optional',
          retrySafe: true,
          queue: toolQueueName('greet'),
          external: false,
        },
      ]);
      const ownId = Number(await inspect.client('ID'));
      const othersConnected = async () =>
        ((await inspect.client('LIST')) as string)
          .split('\n')
          .filter((line) => line.startsWith('id=') && !line.startsWith(`id=${ownId} `)).length;
      // The refusal comes after the worker opened its connections, subscribed and started its timers.
      let refusal: Error | undefined;
      await startWorker({ tools: [greet], redis: server.url, prefix, env: { LOG_LEVEL: 'error' } }).then(
        (started) => started.close(),
        (error: Error) => (refusal = error),
      );
      expect(refusal?.message).to.match(/Tool 'greet' is already served with a different definition/);
      await eventually(async () => ((await othersConnected()) === 0 ? true : undefined), 5000);
    } finally {
      await engine.close();
      inspect.disconnect();
      await server.stop();
    }
  });
});
