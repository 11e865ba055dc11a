// The proof that a team can use the runner with its own tools without this repository: the tarball of `pnpm run pack`
// (test/support/packed-runner.ts: packed once per change of the sources), npm install of it into a project outside
// the repository, and then
// - in plain JavaScript: a tool module there, and `mcpt api` (no tool code) plus `mcpt worker` (MCPT_TOOLS) from that
//   project's node_modules/.bin, on plain Node (no tsx). The api serves the dashboard too: its files are found next
//   to the bundle (dist/admin-assets), as the Lua is (dist/lua);
// - in TypeScript (issue 38): the package's declarations stand alone (strict, module nodenext, no skipLibCheck): the
//   tool examples of the READMEs and of the docs pages their blocks moved to, and every example under examples/
//   compile, and misuses of a tool's arguments and context (a misspelt `ctx.checkpont`) fail with the expected
//   diagnostics, in one tsc run of the workspace's TypeScript.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { DOWNLOADS_TAG } from '../../scripts/lib/downloads.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { launchChromium, skipWithoutChromium } from '../support/browser.ts';
import { eventually, expectRpcError, McpTestClient } from '../support/mcp-client.ts';
import { packedTarball } from '../support/packed-runner.ts';
import { repoRoot, spawnService, type ChildHandle } from '../support/processes.ts';
import { blocksOf, READMES, where } from '../support/readme-blocks.ts';
import { startRedisServer, uniquePrefix, type RedisServer } from '../support/redis-server.ts';

/** The file name prefix of a page's block in the typed project (a docs page's: its path, `docs-tools-md`). */
const PAGE_NAMES: Record<string, string> = { 'README.md': 'readme', 'apps/runner/README.md': 'manual' };
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

describe(`the installable package, installed with npm in a project outside the repository ${DOWNLOADS_TAG}`, function () {
  this.timeout(240_000);
  let project: string;
  /**
   * The typed project's compile, started once the package is installed: a core's half minute of tsc that runs while
   * the JavaScript tests below wait on their processes, rather than after them.
   */
  let typed: Promise<TypedProject> | undefined;

  before(async () => {
    const tarball = await packedTarball();
    project = mkdtempSync(join(tmpdir(), 'mcpt-user-'));
    writeFileSync(join(project, 'package.json'), '{ "name": "my-tools", "private": true, "type": "module" }\n');
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, 'zod'], {
      cwd: project,
      timeout: 120_000,
    });
    typed = typedProject(join(project, 'typed'));
    // Its failure is the typed tests' to report, when they await it.
    typed.catch(() => undefined);
  });

  after(async () => {
    await typed?.catch(() => undefined);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  describe('served with plain Node: mcpt api and mcpt worker from the project (JavaScript)', () => {
    let redis: RedisServer;
    const children: ChildHandle[] = [];
    let client: McpTestClient;
    let env: Record<string, string>;
    let base: string;

    before(async () => {
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

  describe('typed for TypeScript: strict, module nodenext, no skipLibCheck (issue 38)', () => {
    let origins: Map<string, string>;
    let diagnostics: Diagnostic[];

    before(async () => {
      if (!typed) throw new Error('the package was not installed');
      ({ origins, diagnostics } = await typed);
    });

    const misuses = () => diagnostics.filter((diagnostic) => diagnostic.file === MISUSE_FILE);

    it("compiles the READMEs' tool examples and every example under examples/ without a diagnostic", () => {
      expect(origins.size).to.be.above(8);
      const others = diagnostics
        .filter((diagnostic) => diagnostic.file !== MISUSE_FILE)
        .map((diagnostic) => `${origins.get(diagnostic.file) ?? diagnostic.file}: ${diagnostic.text}`);
      expect(others).to.deep.equal([]);
    });

    it("a misspelt context member (ctx.checkpont) fails: \"Property 'checkpont' does not exist on type 'ToolContext'\"", () => {
      const line = MISUSE.split('\n').findIndex((text) => text.includes('ctx.checkpont(')) + 1;
      expect(misuses().find((diagnostic) => diagnostic.line === line)).to.deep.include({
        code: 'TS2551',
        message: "Property 'checkpont' does not exist on type 'ToolContext'. Did you mean 'checkpoint'?",
      });
    });

    it('the arguments are typed from the zod schema and each member of the context by its type: every misuse fails, and nothing else does', () => {
      const expected = MISUSE.split('\n').flatMap((text, i) => {
        const code = /\/\/ error (TS\d+)$/.exec(text)?.[1];
        return code ? [`${i + 1} ${code}`] : [];
      });
      expect(expected.length).to.be.above(10);
      expect(misuses().map((diagnostic) => `${diagnostic.line} ${diagnostic.code}`)).to.deep.equal(expected);
    });
  });
});

/** The typed project as compiled: its sources by their path in it (what each is, for the failure messages), and tsc's say. */
interface TypedProject {
  origins: Map<string, string>;
  diagnostics: Diagnostic[];
}

/**
 * Writes the typed project into `typed` (examples/, the documentation's blocks, the misuses) and compiles it: the
 * checks the typed tests make.
 */
async function typedProject(typed: string): Promise<TypedProject> {
  const origins = new Map<string, string>();
  mkdirSync(typed);
  writeFileSync(join(typed, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  // Every example project under examples/ (a TypeScript project of the package: its src/), its sources as they are.
  // examples/webhook-receiver is a plain ES module with no src/ and no use of the package: webhooks.test.ts runs it.
  for (const example of readdirSync(join(repoRoot, 'examples'))) {
    const sources = join(repoRoot, 'examples', example, 'src');
    if (!existsSync(sources)) continue;
    cpSync(sources, join(typed, 'examples', example), { recursive: true });
    for (const file of readdirSync(sources, { recursive: true, encoding: 'utf8' })) {
      origins.set(join('examples', example, file), relative(repoRoot, join(sources, file)));
    }
  }
  // The documentation's blocks that run with the package (the READMEs' and the docs pages' of test/support/readme-blocks.ts),
  // each as the TypeScript module a user would copy it into.
  for (const block of READMES.flatMap(blocksOf)) {
    if (block.marker?.kind !== 'run' || !/from 'mcp-task-runner'/.test(block.text)) continue;
    const page = PAGE_NAMES[block.file] ?? block.file.replace(/\W+/g, '-');
    const name = `${page}-${(block.marker.arg ?? 'block.mjs').replace(/\.(m?)js$/, '.$1ts')}`;
    writeFileSync(join(typed, name), block.text);
    origins.set(name, `${where(block)} (the block's line 1 is the file's)`);
  }
  writeFileSync(join(typed, MISUSE_FILE), MISUSE);
  origins.set(MISUSE_FILE, 'test/integration/package.test.ts (MISUSE)');
  return { origins, diagnostics: await compile(typed) };
}

/** A user's TypeScript project as the issue describes it (issue 38); Node's types from the workspace. */
const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'nodenext',
    target: 'es2022',
    noEmit: true,
    skipLibCheck: false,
    types: ['node'],
    typeRoots: [join(repoRoot, 'node_modules', '@types')],
  },
  include: ['**/*.ts', '**/*.mts'],
};

const MISUSE_FILE = 'misuse.mts';

/**
 * A tool that uses its arguments and its context as documented (lines without a mark: they must compile) and wrongly
 * (each line marked `// error TSxxxx` must fail with that code). If the package's types were `any`, no line would
 * fail; one line each, so that a diagnostic's line names the misuse.
 */
const MISUSE = `import { ChildTaskError, defineTool, FinalError, LocalError, LocalErrorCode, ProtocolError } from 'mcp-task-runner';
import type { CallToolResult, ToolContext } from 'mcp-task-runner';
// Every type the package names (test/unit/public-api.test.ts pins its values): each must be in its declarations.
import type { ApiHandle, ApiOptions, CallbackTarget, CallToolOptions, CatalogEntry, ElicitParams, EventOutcome, ExternalContext, ExternalHandlers, ExternalRef, ExternalStatus, ExternalSubmission, ExternalToolDefinition, InputOptions, QueueToolDefinition, RetryPolicy, Scheduling, SchedulingInput, SignalOutcome, StepOptions, ToolAnnotations, ToolDefinition, ToolLogger, UpstreamOptions, WaitForEventOptions, WaitOptions, WorkerHandle, WorkerOptions } from 'mcp-task-runner';
import { z } from 'zod';

export const tool = defineTool({
  name: 'misused',
  description: 'Uses its arguments and context rightly, then wrongly',
  inputSchema: z.object({ bucket: z.string(), width: z.number().int().default(800) }),
  taskSupport: 'optional',
  async run({ bucket, width }, ctx: ToolContext): Promise<CallToolResult> {
    const attempt: number = ctx.attempt;
    const taskId: string = ctx.taskId;
    ctx.signal.throwIfAborted();
    await ctx.progress(1, 2, \`\${bucket.toUpperCase()} at \${width.toFixed(0)} px, attempt \${attempt} of \${taskId}\`);
    ctx.log.info('resizing', { bucket });
    const answer = await ctx.elicit({ message: 'Go?', requestedSchema: { type: 'object' } }, { key: 'go' });
    await ctx.sample({ messages: [], maxTokens: 10 });
    await ctx.checkpoint({ next: 1 });
    const last: unknown = ctx.lastCheckpoint;
    const stamp: string = await ctx.step('stamp', () => new Date().toISOString());
    try {
      const child: CallToolResult = await ctx.callTool('count_words', { text: 'two words' }, { key: 'count', ttl: 1000 });
      if (child.isError === true) throw new FinalError('the count failed');
    } catch (error) {
      if (error instanceof ChildTaskError) ctx.log.warn('child failed', { child: error.taskId, code: error.code });
      else if (error instanceof LocalError && error.code === LocalErrorCode.InputTimeout) throw new ProtocolError(-32602, 'late');
      else throw error;
    }
    await ctx.checkpont({ next: 2 }); // error TS2551
    bucket.toFixed(0); // error TS2551
    width.toUpperCase(); // error TS2339
    ctx.attempt.startsWith('1'); // error TS2339
    ctx.taskId.toFixed(0); // error TS2551
    ctx.signal.abort(); // error TS2551
    await ctx.progress('half'); // error TS2345
    ctx.log.debug('resizing'); // error TS2339
    await ctx.elicit({ message: 'Go?' }); // error TS2345
    await ctx.sample('a prompt'); // error TS2345
    ctx.lastCheckpoint.next; // error TS18046
    (await ctx.step('count', () => 1)).length; // error TS2339
    (await ctx.callTool('count_words', { text: 'x' })).content.toUpperCase(); // error TS2339
    await ctx.callTool('count_words', { text: 'x' }, { retries: 3 }); // error TS2353
    new ChildTaskError('t', 'count_words', 'failed', { code: 'x', message: 'y' }); // error TS2322
    if (answer.action === 'accept') return { content: 'done' }; // error TS2322
    return { content: [{ type: 'text', text: \`\${stamp} \${String(last)}\` }] };
  },
});

defineTool({ name: 'bare', description: 'No schema', async run() { return { content: [] }; } }); // error TS2345
`;

interface Diagnostic {
  /** Relative to the project's folder. */
  file: string;
  line: number;
  code: string;
  message: string;
  /** As tsc printed it, continuation lines included. */
  text: string;
}

/** One run of the workspace's tsc over the whole project (every file at once: the lib check is most of the time). */
async function compile(dir: string): Promise<Diagnostic[]> {
  const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const compiling = run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { cwd: dir, timeout: 120_000 });
  // It runs beside the JavaScript tests (their worker judges schemas within a budget of milliseconds): at the lowest
  // priority it takes only the CPU they leave.
  try {
    if (compiling.child.pid !== undefined) setPriority(compiling.child.pid, 19);
  } catch {
    // Not allowed here: it runs at the tests' priority.
  }
  const output = await compiling.then(
    ({ stdout }) => stdout,
    (error: { code?: number; stdout?: string }) => {
      // 2: diagnostics were reported (the misuses); anything else is tsc itself failing.
      if (error.code !== 2) throw error;
      return error.stdout ?? '';
    },
  );
  const diagnostics: Diagnostic[] = [];
  for (const line of output.split('\n')) {
    const found = /^(.+?)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line);
    if (found) {
      const [, file = '', at = '0', code = '', message = ''] = found;
      diagnostics.push({ file, line: Number(at), code, message, text: line });
    } else if (line.trim() !== '') {
      const last = diagnostics.at(-1);
      if (last) last.text += `\n${line}`;
      else diagnostics.push({ file: '', line: 0, code: '', message: line, text: line });
    }
  }
  return diagnostics;
}
