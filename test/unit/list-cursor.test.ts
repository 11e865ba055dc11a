import { expect } from 'chai';
import { decodeCursor, encodeCursor, indexMember } from '@mcp-tasks/engine';
import { InvalidInputError } from '@mcp-tasks/protocol';
import { toWireError } from '@mcp-tasks/api/wires';

describe('tasks/list cursors', () => {
  it('index members sort by creation time, then id', () => {
    const members = [indexMember(1000, 'b'), indexMember(20, 'a'), indexMember(1000, 'a')].sort();
    expect(members).to.deep.equal([indexMember(20, 'a'), indexMember(1000, 'a'), indexMember(1000, 'b')]);
  });

  it('T-LIST-2: a cursor we made decodes back to its member', () => {
    const member = indexMember(Date.now(), '786512e2-9e0d-44bd-8f29-789f320fe840');
    expect(decodeCursor(encodeCursor(member))).to.equal(member);
  });

  it('T-LIST-2: an invalid cursor is an InvalidInputError, -32602 on both wires', () => {
    for (const bad of [
      '',
      'garbage',
      'c1.',
      'c1.!!!',
      encodeCursor('no-time:abc'),
      encodeCursor(`${'0'.repeat(13)}:a:b`),
    ]) {
      expect(() => decodeCursor(bad), bad).to.throw(InvalidInputError);
      const error = (() => {
        try {
          decodeCursor(bad);
        } catch (thrown) {
          return thrown;
        }
      })();
      expect(toWireError(error, '2025-11-25').code).to.equal(-32602);
      expect(toWireError(error, '2026-07-28').code).to.equal(-32602);
    }
  });
});
