// Which x-mcp-header annotations of an input schema are declarations (C26-HDR-4), how a preflight's Mcp-Param-*
// names are allowed (C26-COEX-6), and how header values compare with arguments.
import { expect } from 'chai';
import { allowedHeaders } from '@mcp-tasks/api/cors';
import { checkParamHeaders, paramHeadersOf } from '@mcp-tasks/api/param-headers';

describe('x-mcp-header declarations and Mcp-Param-* checks', () => {
  it('C26-HDR-4: only primitive properties reached through properties, with token names unique in any case, declare headers', () => {
    const schema = {
      type: 'object',
      'x-mcp-header': 'Root',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        again: { type: 'string', 'x-mcp-header': 'REGION' },
        nested: { type: 'object', properties: { zone: { type: ['integer', 'null'], 'x-mcp-header': 'Zone' } } },
        flag: { type: 'boolean', 'x-mcp-header': 'Flag' },
        spaced: { type: 'string', 'x-mcp-header': 'Has Space' },
        list: { type: 'array', 'x-mcp-header': 'List', items: { type: 'string', 'x-mcp-header': 'Item' } },
        either: { anyOf: [{ type: 'string', 'x-mcp-header': 'Either' }] },
        untyped: { 'x-mcp-header': 'Untyped' },
      },
    };
    expect(paramHeadersOf(schema)).to.deep.equal([
      { name: 'Region', path: ['region'] },
      { name: 'Zone', path: ['nested', 'zone'] },
      { name: 'Flag', path: ['flag'] },
    ]);
  });

  it('C26-HDR-4: integers and booleans compare in their JSON spelling; null counts as absent', () => {
    const declarations = [
      { name: 'Zone', path: ['nested', 'zone'] },
      { name: 'Flag', path: ['flag'] },
    ];
    const headers = { 'mcp-param-zone': '42', 'mcp-param-flag': 'false' };
    expect(() => checkParamHeaders(declarations, { nested: { zone: 42 }, flag: false }, headers)).not.to.throw();
    expect(() => checkParamHeaders(declarations, { nested: { zone: 42 }, flag: 'false' }, headers)).not.to.throw();
    expect(() => checkParamHeaders(declarations, { nested: { zone: 42 }, flag: true }, headers)).to.throw(
      /Mcp-Param-Flag header does not match arguments\.flag/,
    );
    expect(() => checkParamHeaders(declarations, { nested: { zone: null } }, {})).not.to.throw();
  });

  it('C26-COEX-6: a preflight gets the standard headers plus the Mcp-Param-* names it asks for, nothing else', () => {
    expect(allowedHeaders('Mcp-Param-Region, x-custom, mcp-name, mcp-param-bad name')).to.equal(
      'Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, ' +
        'Mcp-Name, Mcp-Param-Region',
    );
    expect(allowedHeaders(undefined)).to.not.include('Mcp-Param');
  });
});
