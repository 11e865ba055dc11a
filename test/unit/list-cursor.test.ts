import { expect } from 'chai';
import { decodeCursor, encodeCursor, indexMember } from '@mcp-tasks/engine';
import { ProtocolError } from '@mcp-tasks/protocol';

describe('tasks/list cursors', () => {
  it('index members sort by creation time, then id', () => {
    const members = [indexMember(1000, 'b'), indexMember(20, 'a'), indexMember(1000, 'a')].sort();
    expect(members).to.deep.equal([indexMember(20, 'a'), indexMember(1000, 'a'), indexMember(1000, 'b')]);
  });

  it('T-LIST-2: a cursor we made decodes back to its member', () => {
    const member = indexMember(Date.now(), '786512e2-9e0d-44bd-8f29-789f320fe840');
    expect(decodeCursor(encodeCursor(member))).to.equal(member);
  });

  it('T-LIST-2: an invalid cursor is -32602', () => {
    for (const bad of [
      '',
      'garbage',
      'c1.',
      'c1.!!!',
      encodeCursor('no-time:abc'),
      encodeCursor(`${'0'.repeat(13)}:a:b`),
    ]) {
      expect(() => decodeCursor(bad), bad)
        .to.throw(ProtocolError)
        .with.property('code', -32602);
    }
  });
});
