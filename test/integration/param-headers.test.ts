// Custom headers from tool parameters on 2026-07-28 (C26-HDR-4): a tool whose input schema declares x-mcp-header
// parameters (test/fixtures/param-headers) is called only when each Mcp-Param-* header mirrors its argument.
import { expect } from 'chai';
import { KeySpace, TaskKeys } from '@mcp-tasks/engine';
import { modernPost, WITH_TASKS, type ModernReply } from '../support/modern-client.ts';
import { startSystem, type System } from '../support/in-process.ts';

const TOOL = 'regional_query';

describe('C26-HDR-4: Mcp-Param-* headers of x-mcp-header parameters (real api and worker)', function () {
  this.timeout(60_000);
  let system: System;

  before(async () => {
    system = await startSystem({ env: { MCPT_TOOLS: './test/fixtures/param-headers/tools.ts' } });
  });
  after(async () => {
    await system?.stop();
  });

  const call = (args: Record<string, unknown>, headers: Record<string, string>, capabilities = {}) =>
    modernPost(system.apiUrl, 'tools/call', { name: TOOL, arguments: args }, { headers, capabilities });

  function expectMismatch(reply: ModernReply, message: RegExp): void {
    expect(reply.status, JSON.stringify(reply.body)).to.equal(400);
    expect(reply.body.error?.code).to.equal(-32020);
    expect(reply.body.error?.message).to.match(message);
  }

  it('C26-HDR-4: tools/list publishes the annotation, and a call whose headers mirror its arguments runs', async () => {
    const listed = await modernPost(system.apiUrl, 'tools/list');
    const tool = (listed.body.result?.['tools'] as { name: string; inputSchema: Record<string, unknown> }[]).find(
      (entry) => entry.name === TOOL,
    );
    expect(tool?.inputSchema['properties']).to.deep.include({ region: { type: 'string', 'x-mcp-header': 'Region' } });
    const reply = await call(
      { region: 'us-west1', shard: 7, query: 'select 1' },
      { 'mcp-param-region': 'us-west1', 'Mcp-Param-Shard': ' 7 ' },
    );
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body.result?.['content']).to.deep.equal([{ type: 'text', text: 'select 1 in us-west1/7' }]);
  });

  it('C26-HDR-4, C26-HDR-2: a value that is no plain ASCII travels base64-encoded and is decoded before comparing', async () => {
    const region = ' 東京 ';
    const encoded = `=?base64?${Buffer.from(region).toString('base64')}?=`;
    const reply = await call({ region, query: 'q' }, { 'mcp-param-region': encoded });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body.result?.['content']).to.deep.equal([{ type: 'text', text: `q in ${region}/0` }]);
  });

  it('C26-HDR-4: a missing header for a present argument is 400 with -32020, and nothing runs', async () => {
    // Records are named by TaskKeys only: count them around the refused calls.
    const pattern = new TaskKeys(new KeySpace(system.prefix)).record('*');
    const created = await call({ region: 'eu', query: 'q' }, { 'mcp-param-region': 'eu' }, WITH_TASKS);
    expect(created.body.result?.['resultType'], JSON.stringify(created.body)).to.equal('task');
    const before = (await system.redis.keys(pattern)).length;
    expect(before, 'the task just created has a record').to.be.greaterThan(0);
    expectMismatch(await call({ region: 'eu', query: 'q' }, {}), /Mcp-Param-Region header is required/);
    expectMismatch(
      await call({ region: 'eu', shard: 2, query: 'q' }, { 'mcp-param-region': 'eu' }, WITH_TASKS),
      /Mcp-Param-Shard header is required/,
    );
    expect((await system.redis.keys(pattern)).length).to.equal(before);
  });

  it('C26-HDR-4: a header that does not mirror its argument (other value, other case, or no argument) is 400 with -32020', async () => {
    expectMismatch(
      await call({ region: 'eu', query: 'q' }, { 'mcp-param-region': 'us' }),
      /Mcp-Param-Region header does not match arguments\.region/,
    );
    expectMismatch(
      await call({ region: 'eu', query: 'q' }, { 'mcp-param-region': 'EU' }),
      /does not match arguments\.region/,
    );
    expectMismatch(
      await call({ region: 'eu', shard: 3, query: 'q' }, { 'mcp-param-region': 'eu', 'mcp-param-shard': '4' }),
      /Mcp-Param-Shard header does not match arguments\.shard/,
    );
    expectMismatch(
      await call({ region: 'eu', query: 'q' }, { 'mcp-param-region': 'eu', 'mcp-param-shard': '1' }),
      /Mcp-Param-Shard header is sent but arguments\.shard is absent/,
    );
  });
});
