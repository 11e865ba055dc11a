// `mcpt start` as a newcomer runs it (issue 31): in a project directory, with no REDIS_URL, so it starts its own
// redis-server on a free port. The operator commands find that Redis and say so; a clean stop removes the note;
// a SIGKILL takes the redis-server down with it, and the note it leaves behind is ignored.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../scripts/lib/ports.ts';
import { eventually } from '../support/mcp-client.ts';
import { repoRoot, spawnService, TSX_IMPORT, type ChildHandle } from '../support/processes.ts';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const MCPT = join(repoRoot, 'apps', 'runner', 'src', 'mcpt.ts');

interface Note {
  pid: number;
  redis: { REDIS_URL: string };
  apiUrl: string;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('mcpt start and the operator commands (issue 31)', function () {
  this.timeout(180_000);
  let project: string;
  let env: Record<string, string>;

  beforeEach(() => {
    project = mkdtempSync(join(tmpdir(), 'mcpt-start-'));
    // No REDIS_URL: its own redis-server. The note goes to the project's directory, not the user's.
    env = { REDIS_URL: '', REDIS_CLUSTER_NODES: '', MCPT_STATE_DIR: join(project, 'state'), PORT: '0' };
  });

  afterEach(() => rmSync(project, { recursive: true, force: true }));

  const startMcpt = (): Promise<ChildHandle> =>
    spawnService('mcpt start', '', env, /operator commands .* noted in/, {
      args: [...TSX_IMPORT, MCPT, 'start', '--demo'],
      cwd: project,
    });

  const note = (): Note => JSON.parse(readFileSync(join(project, 'state', 'start.json'), 'utf8')) as Note;

  /** `mcpt <args>` to its exit, with the environment of the test (no REDIS_URL) and the project's note. */
  async function mcpt(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
    const child = spawn(process.execPath, [...TSX_IMPORT, MCPT, ...args], {
      cwd: project,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const release = track(`mcpt ${args.join(' ')}`, () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    await release();
    return { code, out, err };
  }

  it('mcpt overview and list read the Redis of the running mcpt start and say so on stderr; a clean stop removes the note (issue 31)', async () => {
    const started = await startMcpt();
    const { pid, redis } = note();
    try {
      expect(pid).to.equal(started.process.pid);
      expect(redis.REDIS_URL).to.match(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(redis.REDIS_URL).not.to.equal('redis://127.0.0.1:6379');
      const line = `Redis: ${redis.REDIS_URL} (from mcpt start, pid ${pid})`;

      const overview = await mcpt('overview', '--json');
      expect(overview.code, overview.err).to.equal(0);
      expect(overview.err.split('\n')[0]).to.equal(line);
      // The worker of mcpt start is connected to that Redis: the overview shows it.
      expect((JSON.parse(overview.out) as { workers: unknown[] }).workers).to.have.length(1);
      const list = await mcpt('list', '--json');
      expect(list.code, list.err).to.equal(0);
      expect(list.err.split('\n')[0]).to.equal(line);
      JSON.parse(list.out);
    } finally {
      expect(await started.stop('SIGTERM')).to.equal(0);
    }
    expect(existsSync(join(project, 'state', 'start.json'))).to.equal(false);
    expect(await accepts(Number(new URL(redis.REDIS_URL).port))).to.equal(false);
  });

  it('a SIGKILLed mcpt start takes its redis-server with it, and operator commands ignore the note it left (issue 31)', async () => {
    const started = await startMcpt();
    const { redis } = note();
    const port = Number(new URL(redis.REDIS_URL).port);
    expect(await accepts(port)).to.equal(true);
    await started.stop('SIGKILL');
    await eventually(async () => ((await accepts(port)) ? undefined : true), 20_000, 100);
    // The note is still there (nothing ran at the kill), but its process is gone.
    expect(existsSync(join(project, 'state', 'start.json'))).to.equal(true);
    const overview = await mcpt('overview', '--json');
    expect(overview.err.split('\n')[0]).to.equal(
      'Redis: redis://127.0.0.1:6379 (the default: no REDIS_URL and no running mcpt start)',
    );
  });
});

describe('npm start with AUTH_API_KEYS (issue 31)', function () {
  this.timeout(180_000);

  it('gets ready through /readyz and its demo client sends the first key as a bearer token (issue 31)', async () => {
    const port = await freePort();
    const key = 'k'.repeat(24);
    const start = await spawnService(
      'npm start',
      'scripts/start.ts',
      {
        REDIS_URL: await sharedRedisUrl(),
        REDIS_PREFIX: uniquePrefix(),
        HOST: '127.0.0.1',
        PORT: String(port),
        FAKE_BATCH: '0',
        AUTH_API_KEYS: `demo:${key},other:${'o'.repeat(24)}`,
      },
      /Running\. Press Ctrl-C to stop\.|demo failed|exited|did not answer/,
    );
    try {
      const output = start.logs.join('\n');
      expect(output).to.match(/demo: tasks\/result -> .*"isError":false|demo: tasks\/result -> \{"content"/);
      expect(output).to.include('Running. Press Ctrl-C to stop.');
      expect(output).to.include('Authorization: Bearer $MCP_TOKEN');
      expect(output).not.to.include(key);
    } finally {
      await start.stop('SIGTERM');
    }
  });
});
