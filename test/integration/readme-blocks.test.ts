// Every fenced block of the two READMEs (the repository's README.md and the package's manual, apps/runner/README.md),
// and of the docs pages the README's blocks moved to (issue 39), is run, or says why not, so that none can rot
// (issue 31): each follows a marker comment (test/support/readme-blocks.ts).
// This test runs the `run:` blocks: `commands` (a shell script in the project; `npm install` of the package's
// tarball, by its name or its path, installs the packed tarball), `file <name>` (written into the project),
// `background` (a long-running command, up once `ready:` matches its output), `node <file>` / `module <file>` (written
// and run with node; the endpoint http://127.0.0.1:3000/mcp is the live one), with `; expect: <regex>` on what it
// prints. The newcomer: a temp directory, the manual's blocks in order (npm init -y, the tarball, tools.js, `mcpt
// start` on a Redis of the test, clients of both wires, `mcpt overview` and `list`), then the README's on a worker of
// the demo tools, all on Node 22.15.0, the lowest the package admits. The pages themselves are checked without a
// process (issue 39): every relative link of README.md, the manual and docs/*.md names a file of the repository (and a
// heading of a Markdown page it points into), README.md's map links every page of docs/, and README.md stays a front
// door: under 15 KB, its quick start on the first screen.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { DOWNLOADS_TAG, LOWEST_NODE } from '../../scripts/lib/downloads.ts';
import { freePort } from '../../scripts/lib/ports.ts';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { nodeBinary, packedTarball, pathFor } from '../support/packed-runner.ts';
import { repoRoot } from '../support/processes.ts';
import { blocksOf, headingAnchorsOf, READMES, relativeLinksOf, where, type Block } from '../support/readme-blocks.ts';
import { startRedisServer, uniquePrefix, type RedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const run = promisify(execFile);
const DOCUMENTED_URL = 'http://127.0.0.1:3000/mcp';
/** The package in an `npm install` line: its name, or the path of its tarball (`../x/dist/mcp-task-runner-0.1.0.tgz`). */
const TARBALL_IN_INSTALL = /^(npm install .*?)(?:\S*\/)?(mcp-task-runner(?:-\d[\w.-]*\.tgz)?)(?=\s|$)/gm;

const blocks = READMES.flatMap(blocksOf);
const runId = (block: Block) => (block.marker?.kind === 'run' ? block.marker.id : undefined);

/** A long-running command in its own process group (npx and what it starts stop together). */
interface Background {
  child: ChildProcess;
  output: string[];
  stop(): Promise<void>;
}

async function startBackground(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<Background> {
  const child = spawn('sh', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = once(child, 'exit');
  // 'close': every process of the group that held its output is gone, not only the shell.
  const closed = once(child, 'close');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGTERM');
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }, 10_000);
    await closed;
    clearTimeout(timer);
  };
  const release = track(`readme: ${command}`, stop);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in 60 s: ${command}\n${output.join('')}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (ready.test(output.join(''))) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(([code]) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${String(code)} before it was ready: ${command}\n${output.join('')}`));
    });
  });
  return { child, output, stop: release };
}

describe('the fenced blocks of README.md, apps/runner/README.md and the docs pages they moved to have markers (issue 31)', () => {
  it('every fenced block has a marker; `same as` names a block run with the same text (issue 31)', () => {
    expect(blocks.length).to.be.above(20);
    const problems = blocks
      .filter((block) => block.markerError)
      .map((block) => `${where(block)}: ${block.markerError}`);
    expect(problems, 'blocks without a valid marker').to.deep.equal([]);
    const byId = new Map(blocks.filter(runId).map((block) => [runId(block), block]));
    for (const block of blocks) {
      if (block.marker?.kind !== 'same') continue;
      const original = byId.get(block.marker.id);
      expect(original, `${where(block)}: no block is run as #${block.marker.id}`).to.not.equal(undefined);
      expect(block.text, `${where(block)} differs from #${block.marker.id}`).to.equal(original?.text);
    }
  });
});

const README_MAX_BYTES = 15_000;
/** A newcomer's first screen: the quick start's command must be on it. */
const FIRST_SCREEN_LINES = 60;
const DOCS_PAGES = readdirSync(join(repoRoot, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);

describe('README.md is the front door, and every link of the documentation leads somewhere (issue 39)', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');

  it(`README.md is under ${README_MAX_BYTES} bytes: the rest is in docs/`, () => {
    expect(Buffer.byteLength(readme)).to.be.below(README_MAX_BYTES);
  });

  it(`the quick start (npm start, npm test) is in the first ${FIRST_SCREEN_LINES} lines of README.md`, () => {
    const lines = readme.split('\n');
    const heading = lines.findIndex((line) => /^## Quick start/.test(line));
    const start = lines.findIndex((line) => /^npm start\b/.test(line));
    const test = lines.findIndex((line) => /^npm test\b/.test(line));
    expect(heading, 'the "## Quick start" heading').to.be.within(0, FIRST_SCREEN_LINES - 1);
    expect(start, 'the line `npm start`').to.be.within(heading, FIRST_SCREEN_LINES - 1);
    expect(test, 'the line `npm test` (the command .ci/run runs)').to.be.within(heading, FIRST_SCREEN_LINES - 1);
  });

  it("README.md's map links every page of docs/", () => {
    const linked = new Set(relativeLinksOf('README.md').map((link) => normalize(link.target.split('#')[0] ?? '')));
    expect(DOCS_PAGES.filter((page) => !linked.has(page))).to.deep.equal([]);
  });

  it('every relative link of README.md, apps/runner/README.md and docs/*.md names a file of the repository, and a heading of a Markdown page it points into', () => {
    const pages = ['README.md', 'apps/runner/README.md', ...DOCS_PAGES];
    const links = pages.flatMap(relativeLinksOf);
    expect(links.length).to.be.above(50);
    const broken = links.flatMap(({ file, line, target }) => {
      const [path = '', anchor] = target.split('#');
      const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      const absolute = join(repoRoot, resolved);
      if (resolved.startsWith('..') || !existsSync(absolute)) return [`${file}:${line}: ${target}: no such file`];
      if (
        anchor &&
        resolved.endsWith('.md') &&
        statSync(absolute).isFile() &&
        !headingAnchorsOf(resolved).has(anchor)
      ) {
        return [`${file}:${line}: ${target}: no heading #${anchor} in ${resolved}`];
      }
      return [];
    });
    expect(broken).to.deep.equal([]);
  });
});

describe(`every fenced block of README.md, apps/runner/README.md and the docs pages they moved to is run, or says why not (issue 31) ${DOWNLOADS_TAG}`, function () {
  this.timeout(300_000);
  let redis: RedisServer;
  let home: string;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let apiUrl: string;
  let tarball: string;
  const background: Background[] = [];
  const ran = new Set<Block>();

  before(async () => {
    const [packed, node] = await Promise.all([packedTarball(), nodeBinary(LOWEST_NODE)]);
    tarball = packed;
    redis = await startRedisServer();
    home = mkdtempSync(join(tmpdir(), 'mcpt-readme-'));
    project = join(home, 'my-tools');
    mkdirSync(project);
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}/mcp`;
    env = {
      ...process.env,
      PATH: pathFor(node),
      NODE_OPTIONS: '',
      REDIS_URL: redis.url,
      REDIS_PREFIX: uniquePrefix(),
      HOST: '127.0.0.1',
      PORT: String(port),
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    // The blocks say which tools a process serves; nothing of the test runner's own environment may.
    delete env['MCPT_TOOLS'];
    delete env['MCPT_DEMO'];
  });

  after(async () => {
    for (const process of background.reverse()) await process.stop();
    await redis?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function runBlock(block: Block): Promise<void> {
    const marker = block.marker;
    if (marker?.kind !== 'run') return;
    const text = block.text.replaceAll(DOCUMENTED_URL, apiUrl);
    let printed = '';
    if (marker.how === 'file') {
      writeFileSync(join(project, marker.arg ?? ''), text);
    } else if (marker.how === 'commands') {
      const script = text.replace(TARBALL_IN_INSTALL, (_all, install: string, name: string) => {
        // The documented path names the tarball `npm run pack` writes for this version.
        if (name.endsWith('.tgz')) expect(name, `${where(block)}: the tarball's name`).to.equal(basename(tarball));
        return `${install}${tarball}`;
      });
      const result = await run('sh', ['-e', '-c', script], { cwd: project, env, timeout: 180_000 }).catch(
        (error: { stdout?: string; stderr?: string }) => {
          throw new Error(`${where(block)} failed:\n${script}\n${error.stdout ?? ''}${error.stderr ?? ''}`);
        },
      );
      printed = `${result.stdout}${result.stderr}`;
    } else if (marker.how === 'background') {
      const command = text.split('\n').find((line) => line.trim() !== '' && !line.startsWith('#')) ?? '';
      background.push(await startBackground(command, project, env, marker.ready ?? /./));
    } else {
      const file = marker.arg ?? 'block.mjs';
      writeFileSync(join(project, file), text);
      const result = await run('node', [file], { cwd: project, env, timeout: 60_000 }).catch(
        (error: { stdout?: string; stderr?: string }) => {
          throw new Error(`${where(block)} (${file}) failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
        },
      );
      printed = `${result.stdout}${result.stderr}`;
    }
    if (marker.expect) expect(printed, `${where(block)} printed`).to.match(marker.expect);
    ran.add(block);
  }

  let lister: McpTestClient | undefined;
  /** The catalog reaches the api shortly after a worker is ready: the blocks call the tools once it is listed. */
  async function waitForTools(...names: string[]): Promise<void> {
    const client = (lister ??= await McpTestClient.connect(apiUrl));
    await eventually(async () => {
      const { tools } = (await client.call('tools/list')) as { tools: { name: string }[] };
      const listed = tools.map((tool) => tool.name);
      return names.every((name) => listed.includes(name)) ? listed : undefined;
    });
  }

  it("runs the manual's blocks in order as a newcomer: npm init, the tarball, tools.js, mcpt start, both wires' clients, mcpt overview and list (issue 31)", async () => {
    for (const block of blocks.filter((each) => each.file === 'apps/runner/README.md')) {
      if (block.marker?.kind === 'run' && block.marker.how !== 'background' && background.length > 0) {
        await waitForTools('resize_images');
      }
      await runBlock(block);
    }
    const started = background[0]?.output.join('') ?? '';
    expect(started).to.match(/MCP endpoint/);
  });

  it("runs the README's blocks, then the docs pages', on the same system with a worker of the demo tools (issue 31, issue 39)", async () => {
    // The README's examples call the demo tools (count_primes, echo): a worker serves them beside the manual's.
    background.push(await startBackground('npx mcpt worker', project, { ...env, MCPT_DEMO: '1' }, /worker ready/));
    await waitForTools('count_primes', 'echo');
    for (const block of blocks.filter((each) => each.file !== 'apps/runner/README.md')) await runBlock(block);
  });

  it('ran every block marked `run:` (issue 31)', () => {
    const missed = blocks.filter((block) => block.marker?.kind === 'run' && !ran.has(block)).map(where);
    expect(missed).to.deep.equal([]);
  });
});
