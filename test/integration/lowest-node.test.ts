// The lowest Node the published package admits (publishConfig.engines: >=22.15.0) installs it and runs it (issue
// 31): a fresh `npm init -y` project installs the packed tarball with npm running on Node 22.15.0 itself and
// --engine-strict (an EBADENGINE of any dependency fails the install), then `mcpt start` on that Node serves a tool
// that a client, on that Node too, calls as a task. Node 22.15.0 is the npm package node@22.15.0 (through npx), so
// the system Node, on which the workspace is developed, stays as it is.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DOWNLOADS_TAG, LOWEST_NODE } from '../../scripts/lib/downloads.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { nodeBinary, npmCli, packedTarball, pathFor } from '../support/packed-runner.ts';
import { spawnService, type ChildHandle } from '../support/processes.ts';
import { startRedisServer, uniquePrefix, type RedisServer } from '../support/redis-server.ts';

const run = promisify(execFile);
const LOWEST = LOWEST_NODE;

const TOOLS = `import { defineTool } from 'mcp-task-runner';
import { z } from 'zod';

export const tools = [
  defineTool({
    name: 'node_version',
    description: 'Says which Node runs the worker',
    inputSchema: z.object({}),
    taskSupport: 'optional',
    async run() {
      return { content: [{ type: 'text', text: process.version }] };
    },
  }),
];
`;

const CLIENT = `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

const client = new Client({ name: 'lowest-node', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const { task } = await client.request(
  { method: 'tools/call', params: { name: 'node_version', arguments: {}, task: {} } },
  CreateTaskResultSchema,
);
const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
console.log(JSON.stringify({ client: process.version, server: result.content[0].text }));
await client.close();
`;

describe(`the published package on the lowest Node it admits, ${LOWEST} (issue 31) ${DOWNLOADS_TAG}`, function () {
  this.timeout(300_000);
  let project: string;
  let node: string;
  let env: NodeJS.ProcessEnv;
  let redis: RedisServer;
  let start: ChildHandle | undefined;
  let install: { stdout: string; stderr: string };

  before(async () => {
    const [tarball, binary, npm] = await Promise.all([packedTarball(), nodeBinary(LOWEST), npmCli()]);
    node = binary;
    project = mkdtempSync(join(tmpdir(), 'mcpt-lowest-node-'));
    env = { ...process.env, PATH: pathFor(node), NODE_OPTIONS: '' };
    await run(node, [npm, 'init', '-y'], { cwd: project, env });
    install = await run(
      node,
      [npm, 'install', '--engine-strict', '--prefer-offline', '--no-audit', '--no-fund', tarball, 'zod'],
      { cwd: project, env, timeout: 180_000 },
    );
    writeFileSync(join(project, 'tools.mjs'), TOOLS);
    writeFileSync(join(project, 'client.mjs'), CLIENT);
    redis = await startRedisServer();
  });

  after(async () => {
    await start?.stop();
    await redis?.stop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it(`npm on Node ${LOWEST} installs the tarball with --engine-strict: no dependency refuses it (issue 31)`, async () => {
    expect(`${install.stdout}\n${install.stderr}`).not.to.match(/EBADENGINE/);
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules', 'mcp-task-runner', 'package.json'), 'utf8'),
    ) as { engines: { node: string } };
    expect(installed.engines.node).to.equal(`>=${LOWEST}`);
    const { stdout } = await run(node, ['--version']);
    expect(stdout.trim()).to.equal(`v${LOWEST}`);
  });

  it(`\`mcpt start\` runs on Node ${LOWEST} and an SDK client on it gets a task's result (issue 31)`, async () => {
    const port = await freePort();
    start = await spawnService(
      'mcpt start (node 22.15)',
      '',
      {
        ...env,
        REDIS_URL: redis.url,
        REDIS_PREFIX: uniquePrefix(),
        HOST: '127.0.0.1',
        PORT: String(port),
        MCPT_TOOLS: './tools.mjs',
      },
      /MCP endpoint/,
      // The bin as a user runs it: its `#!/usr/bin/env node` finds Node 22.15.0 first on PATH.
      { command: join(project, 'node_modules', '.bin', 'mcpt'), args: ['start'], cwd: project },
    );
    const { stdout } = await run(node, ['client.mjs', `http://127.0.0.1:${port}/mcp`], {
      cwd: project,
      env,
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').pop() ?? '{}')).to.deep.equal({
      client: `v${LOWEST}`,
      server: `v${LOWEST}`,
    });
  });
});
