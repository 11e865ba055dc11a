// The gateway's configuration (docs/gateway.md): UPSTREAM_MCP_* for one upstream, MCPT_UPSTREAMS for several, and
// the allow/deny patterns.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadUpstreams } from '@mcp-tasks/worker';
import { isResendable, isToolAllowed, splitCommand } from '@mcp-tasks/worker/internals';
import { configError } from '../support/config-error.ts';

function fileWith(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'mcpt-upstreams-')), 'upstreams.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('upstream configuration', () => {
  it('has no upstream when none is configured', () => {
    expect(loadUpstreams({})).to.deep.equal([]);
  });

  it('UPSTREAM_MCP_COMMAND: a command line split like a shell would, with the documented defaults', () => {
    const [upstream] = loadUpstreams({ UPSTREAM_MCP_COMMAND: `npx -y some-mcp-server --root "/tmp/a b" --flag='x y'` });
    expect(upstream).to.deep.include({
      name: 'upstream',
      command: 'npx',
      args: ['-y', 'some-mcp-server', '--root', '/tmp/a b', '--flag=x y'],
      prefix: '',
      concurrency: 4,
      affinity: 'stateless',
      timeoutMs: 1_800_000,
      connectTimeoutMs: 10_000,
      idleMs: 300_000,
      maxTools: 200,
      deny: [],
      taskSupport: {},
    });
    expect(upstream?.allow).to.equal(undefined);
    expect(upstream?.retrySafe, 'unset: the upstream’s annotations decide').to.equal(undefined);
  });

  it('UPSTREAM_MCP_URL with headers whose ${VARIABLES} come from the environment', () => {
    const [upstream] = loadUpstreams({
      UPSTREAM_MCP_URL: 'https://mcp.example.com/mcp',
      UPSTREAM_MCP_HEADERS: '{"Authorization":"Bearer ${API_TOKEN}"}',
      API_TOKEN: 'secret-1',
      UPSTREAM_MCP_NAME: 'remote',
      UPSTREAM_MCP_PREFIX: 'remote_',
      UPSTREAM_MCP_RETRY_SAFE: 'true',
      UPSTREAM_MCP_CONCURRENCY: '8',
      UPSTREAM_MCP_TIMEOUT_MS: '5000',
      UPSTREAM_MCP_MAX_TOOLS: '50',
    });
    expect(upstream).to.deep.include({
      name: 'remote',
      url: 'https://mcp.example.com/mcp',
      headers: { Authorization: 'Bearer secret-1' },
      prefix: 'remote_',
      retrySafe: true,
      concurrency: 8,
      timeoutMs: 5000,
      maxTools: 50,
    });
  });

  it('names the variable a header needs when it is not set', () => {
    const message = configError(() =>
      loadUpstreams({ UPSTREAM_MCP_URL: 'http://h/mcp', UPSTREAM_MCP_HEADERS: '{"Authorization":"Bearer ${NOPE}"}' }),
    );
    expect(message).to.match(/headers\.Authorization names \$\{NOPE\}, which is not set/);
  });

  it('MCPT_UPSTREAMS: several upstreams from a file, with every option', () => {
    const path = fileWith({
      upstreams: [
        {
          name: 'files',
          command: 'node',
          args: ['server.js', '/data'],
          prefix: 'fs_',
          allow: ['read_*'],
          deny: ['read_media_file'],
          taskSupport: { read_text_file: 'required' },
          concurrency: 2,
          retrySafe: true,
          timeoutMs: 60_000,
        },
        { name: 'remote', url: 'http://127.0.0.1:9/mcp' },
      ],
    });
    const upstreams = loadUpstreams({ MCPT_UPSTREAMS: path });
    expect(upstreams.map((u) => u.name)).to.deep.equal(['files', 'remote']);
    expect(upstreams[0]).to.deep.include({ prefix: 'fs_', concurrency: 2, retrySafe: true, timeoutMs: 60_000 });
    expect(upstreams[0]?.taskSupport).to.deep.equal({ read_text_file: 'required' });
  });

  it('refuses an upstream with both or neither of command and url, unknown keys, and a name used twice', () => {
    expect(configError(() => loadUpstreams({ MCPT_UPSTREAMS: fileWith([{ name: 'a' }]) }))).to.match(
      /upstreams\[0\].*exactly one of `command` \(stdio\) or `url`/,
    );
    expect(
      configError(() => loadUpstreams({ MCPT_UPSTREAMS: fileWith([{ command: 'x', url: 'http://h/mcp' }]) })),
    ).to.match(/exactly one of/);
    expect(configError(() => loadUpstreams({ MCPT_UPSTREAMS: fileWith([{ command: 'x', concurency: 2 }]) }))).to.match(
      /concurency/,
    );
    expect(
      configError(() =>
        loadUpstreams({ MCPT_UPSTREAMS: fileWith([{ command: 'x' }]), UPSTREAM_MCP_URL: 'http://h/mcp' }),
      ),
    ).to.match(/Upstream name 'upstream' is used twice/);
    expect(configError(() => loadUpstreams({ MCPT_UPSTREAMS: fileWith('not json') }))).to.match(
      /MCPT_UPSTREAMS: cannot read/,
    );
    expect(configError(() => loadUpstreams({ UPSTREAM_MCP_COMMAND: 'node "unclosed' }))).to.match(/unclosed "/);
  });

  it('splits a command line: quotes, escapes and runs of spaces', () => {
    expect(splitCommand(`  a  'b c' "d \\"e\\"" f\\ g ''`)).to.deep.equal(['a', 'b c', 'd "e"', 'f g', '']);
  });

  it('allow and deny lists take names and * patterns; deny wins', () => {
    const lists = { allow: ['read_*', 'echo'], deny: ['read_media_*'] };
    expect(isToolAllowed(lists, 'read_text_file')).to.equal(true);
    expect(isToolAllowed(lists, 'echo')).to.equal(true);
    expect(isToolAllowed(lists, 'echo2')).to.equal(false);
    expect(isToolAllowed(lists, 'read_media_file')).to.equal(false);
    expect(isToolAllowed({ deny: [] }, 'anything.at+all')).to.equal(true);
  });

  it('UPSTREAM_MCP_AFFINITY, _CONNECT_TIMEOUT_MS and _IDLE_MS; an affinity that does not exist is refused', () => {
    const [upstream] = loadUpstreams({
      UPSTREAM_MCP_COMMAND: 'node server.js',
      UPSTREAM_MCP_AFFINITY: 'per-principal',
      UPSTREAM_MCP_CONNECT_TIMEOUT_MS: '2500',
      UPSTREAM_MCP_IDLE_MS: '60000',
    });
    expect(upstream).to.deep.include({ affinity: 'per-principal', connectTimeoutMs: 2500, idleMs: 60_000 });
    expect(configError(() => loadUpstreams({ UPSTREAM_MCP_COMMAND: 'x', UPSTREAM_MCP_AFFINITY: 'sticky' }))).to.match(
      /affinity/,
    );
  });

  it('a call that may have started is sent again for read-only or idempotent tools, unless retrySafe says otherwise', () => {
    const readOnly = { readOnlyHint: true };
    const idempotent = { idempotentHint: true };
    const neither = { readOnlyHint: false, idempotentHint: false };
    expect(isResendable({}, 'read', readOnly)).to.equal(true);
    expect(isResendable({}, 'put', idempotent)).to.equal(true);
    expect(isResendable({}, 'write', neither)).to.equal(false);
    expect(isResendable({}, 'write', undefined)).to.equal(false);
    expect(isResendable({ retrySafe: false }, 'read', readOnly), 'false: none').to.equal(false);
    expect(isResendable({ retrySafe: true }, 'write', neither), 'true: all').to.equal(true);
    expect(isResendable({ retrySafe: ['write_*'] }, 'write_file', neither)).to.equal(true);
    expect(isResendable({ retrySafe: ['write_*'] }, 'move_file', neither)).to.equal(false);
    expect(isResendable({ retrySafe: ['write_*'] }, 'read', readOnly), 'a list adds to the annotated').to.equal(true);
  });
});
