// The proof that a team can use the runner with its own tools without this repository: `pnpm run pack`, npm install
// of the tarball into a project outside the repository, a tool module there in plain JavaScript, and `mcpt api` (no
// tool code) plus `mcpt worker` (MCPT_TOOLS) from that project's node_modules/.bin, on plain Node (no tsx). The api
// serves the dashboard too: its files are found next to the bundle (dist/admin-assets), as the Lua is (dist/lua).
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../scripts/lib/ports.ts';
import { launchChromium, skipWithoutChromium } from '../support/browser.ts';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { repoRoot, spawnService, type ChildHandle } from '../support/processes.ts';
import { startRedisServer, uniquePrefix, type RedisServer } from '../support/redis-server.ts';

const run = promisify(execFile);
const ADMIN_TOKEN = 'package-admin-token-0123456789';

const TOOLS_JS = `import { defineTool } from 'mcp-task-runner';
import { z } from 'zod';

export const tools = [
  defineTool({
    name: 'add',
    title: 'Add',
    description: 'Adds two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    taskSupport: 'optional',
    async run({ a, b }, { progress }) {
      await progress(1, 1);
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    },
  }),
  defineTool({
    name: 'code',
    description: 'Counts the bytes of a hex code of up to 1,000 of them, which may be set apart with --',
    inputSchema: z.object({ code: z.string().regex(/^(?:[0-9a-f][0-9a-f]|--){1,1000}$/) }),
    taskSupport: 'optional',
    async run({ code }) {
      return { content: [{ type: 'text', text: String(code.length / 2) }] };
    },
  }),
];
`;

describe('the installable package, used from a project outside the repository (npm, plain Node)', function () {
  this.timeout(240_000);
  let project: string;
  let redis: RedisServer;
  const children: ChildHandle[] = [];
  let client: McpTestClient;
  let env: Record<string, string>;
  let base: string;

  before(async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'apps', 'runner', 'package.json'), 'utf8')) as {
      version: string;
    };
    await run(process.execPath, ['scripts/pack.mjs'], { cwd: repoRoot, timeout: 180_000 });
    const tarball = join(repoRoot, 'dist', `mcp-task-runner-${version}.tgz`);
    expect(existsSync(tarball), tarball).to.equal(true);

    project = mkdtempSync(join(tmpdir(), 'mcpt-user-'));
    writeFileSync(join(project, 'package.json'), '{ "name": "my-tools", "private": true, "type": "module" }\n');
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, 'zod'], {
      cwd: project,
      timeout: 120_000,
    });
    writeFileSync(join(project, 'tools.js'), TOOLS_JS);

    redis = await startRedisServer();
    const mcpt = join(project, 'node_modules', '.bin', 'mcpt');
    // PATH without the repository's node_modules/.bin: nothing of the workspace (tsx) can help.
    env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: uniquePrefix(),
      PATH: String(process.env['PATH'])
        .split(':')
        .filter((dir) => !dir.startsWith(repoRoot))
        .join(':'),
      NODE_OPTIONS: '',
    };
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const apiEnv = { ...env, HOST: '127.0.0.1', PORT: String(port), ADMIN_TOKEN };
    children.push(
      await spawnService('mcpt api', '', apiEnv, /listening on/, {
        command: mcpt,
        args: ['api'],
        cwd: project,
      }),
    );
    children.push(
      await spawnService('mcpt worker', '', { ...env, MCPT_TOOLS: './tools.js' }, /worker ready/, {
        command: mcpt,
        args: ['worker'],
        cwd: project,
      }),
    );
    client = await McpTestClient.connect(`http://127.0.0.1:${port}/mcp`);
  });

  after(async () => {
    for (const child of children.reverse()) await child.stop();
    await redis?.stop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('lists the tool the worker published (the api loads no tool code)', async () => {
    // `code` joins the listing when a schema thread has judged it, a moment after `add`.
    const tools = await eventually(async () => {
      const listed = ((await client.call('tools/list')) as { tools: Record<string, unknown>[] }).tools;
      return listed.length === 2 ? listed : undefined;
    });
    expect(tools.map((tool) => tool['name'])).to.deep.equal(['add', 'code']);
    expect(tools[0]).to.deep.include({ title: 'Add', execution: { taskSupport: 'optional' } });
  });

  it('runs the tool as a task and as a plain call, end to end', async () => {
    const task = await client.createTask('add', { a: 2, b: 3 });
    const result = await client.call('tasks/result', { taskId: task['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: '5' }]);
    expect(result['structuredContent']).to.deep.equal({ sum: 5 });
    const plain = await client.call('tools/call', { name: 'add', arguments: { a: 40, b: 2 } });
    expect(plain['content']).to.deep.equal([{ type: 'text', text: '42' }]);
  });

  it('refuses bad arguments at call time with -32602 naming the field', async () => {
    await expectRpcError(
      client.call('tools/call', { name: 'add', arguments: { a: 'two', b: 2 }, task: {} }),
      -32602,
      /Invalid arguments for tool 'add': a: must be number/,
    );
  });

  it('a schema too costly for the event loop is judged, compiled and validated in a schema thread of the bundle', async () => {
    // 6,000 RE2 instructions: more than SCHEMA_INLINE_MAX_BYTES, so the api compiled it in dist/schema-thread.js.
    await expectRpcError(
      client.call('tools/call', { name: 'code', arguments: { code: 'zz' }, task: {} }),
      -32602,
      `Invalid arguments for tool 'code': code: must match pattern "^(?:[0-9a-f][0-9a-f]|--){1,1000}$"`,
    );
    const plain = await client.call('tools/call', { name: 'code', arguments: { code: 'c0ffee' } });
    expect(plain['content']).to.deep.equal([{ type: 'text', text: '3' }]);
  });

  it('serves the dashboard from the bundle: its pages, and every file of the sources found in dist/admin-assets', async () => {
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const sources = join(repoRoot, 'apps', 'api', 'src', 'admin-assets');
    const files = readdirSync(sources).sort();
    const installed = join(project, 'node_modules', 'mcp-task-runner', 'dist', 'admin-assets');
    expect(readdirSync(installed).sort()).to.deep.equal(files);
    for (const file of files) {
      const response = await fetch(`${base}/admin/assets/${file}`, { headers });
      expect(response.status, file).to.equal(200);
      expect(await response.text(), file).to.equal(readFileSync(join(sources, file), 'utf8'));
    }
    for (const path of ['/admin/', '/admin/tasks/some-task', '/admin/assets/uplot.js', '/admin/assets/uplot.css']) {
      expect((await fetch(`${base}${path}`, { headers })).status, path).to.equal(200);
    }
  });

  it('the dashboard of the installed package works in a browser: overview, charts, a task and its page', async function () {
    skipWithoutChromium(this);
    const task = await client.createTask('add', { a: 1, b: 1 });
    await client.call('tasks/result', { taskId: task['taskId'] });
    const { context, release } = await launchChromium({
      httpCredentials: { username: 'admin', password: ADMIN_TOKEN },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`${base}/admin`);
      await page.waitForSelector('.card[data-name="workers"]');
      await page.waitForSelector('#charts[data-updated]');
      await page.click(`tr[data-task-id="${String(task['taskId'])}"]`);
      await page.waitForSelector('#status[data-status="completed"]');
      expect(await page.textContent('#outcome')).to.include('"sum": 2');
    } finally {
      await release();
    }
  });

  it('serves the tools of an existing MCP server from the installed `mcpt worker` (UPSTREAM_MCP_COMMAND)', async () => {
    const everything = join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    const worker = await spawnService(
      'mcpt worker (upstream)',
      '',
      { ...env, UPSTREAM_MCP_COMMAND: `${process.execPath} ${everything} stdio`, UPSTREAM_MCP_PREFIX: 'up_' },
      /worker ready/,
      { command: join(project, 'node_modules', '.bin', 'mcpt'), args: ['worker'], cwd: project },
    );
    children.push(worker);
    // The worker is ready at once; the upstream's tools are published as soon as it is listed (docs/gateway.md).
    await eventually(() => worker.records().find((record) => record['message'] === 'served tools changed'));
    const task = await client.createTask('up_echo', { message: 'installed' });
    const result = await client.call('tasks/result', { taskId: task['taskId'] });
    expect(result['content']).to.deep.equal([{ type: 'text', text: 'Echo: installed' }]);
  });
});
