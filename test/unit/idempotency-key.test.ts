// How a tools/call's idempotency key is read, for both wires (apps/api/src/calls/idempotency.ts): from the header,
// bare or as a Structured Field string, or from `_meta`; refused when it is empty, too long, not printable ASCII, or
// given twice with different values; and the digest that tells one call from another under a key.
import { expect } from 'chai';
import { idempotencyKeyOf } from '@mcp-tasks/api/idempotency';
import { callDigest, InvalidInputError, RunnerMeta } from '@mcp-tasks/protocol';

const META = RunnerMeta.IdempotencyKey;

describe('idempotency keys (Idempotency-Key header, _meta)', () => {
  it('reads the header, bare or quoted, or the _meta key; none gives undefined', () => {
    expect(idempotencyKeyOf({ 'idempotency-key': 'k-1' }, undefined, 255)).to.equal('k-1');
    expect(idempotencyKeyOf({ 'idempotency-key': ' "k-\\"1\\"" ' }, undefined, 255)).to.equal('k-"1"');
    expect(idempotencyKeyOf({}, { [META]: 'k-2' }, 255)).to.equal('k-2');
    expect(idempotencyKeyOf({ 'idempotency-key': 'k-3' }, { [META]: 'k-3' }, 255)).to.equal('k-3');
    expect(idempotencyKeyOf({}, { progressToken: 1 }, 255)).to.equal(undefined);
  });

  it('refuses with InvalidInputError (-32602) a key that is empty, too long, not printable, not a string, or two keys', () => {
    const refused = (headers: Record<string, string>, meta?: Record<string, unknown>) => () =>
      idempotencyKeyOf(headers, meta, 8);
    expect(refused({ 'idempotency-key': '' })).to.throw(InvalidInputError, /use 1 to 8 printable ASCII characters/);
    expect(refused({ 'idempotency-key': '""' })).to.throw(InvalidInputError, /IDEMPOTENCY_KEY_MAX_LENGTH/);
    expect(refused({ 'idempotency-key': '123456789' })).to.throw(InvalidInputError, /use 1 to 8/);
    expect(refused({}, { [META]: 'clé' })).to.throw(InvalidInputError, /printable ASCII/);
    expect(refused({}, { [META]: 42 })).to.throw(InvalidInputError, /must be a string/);
    expect(refused({ 'idempotency-key': 'a' }, { [META]: 'b' })).to.throw(InvalidInputError, /name different keys/);
  });

  it('digests the tool and its arguments whatever the order of their keys; another tool or argument differs', () => {
    const digest = callDigest('render', { scene: 'a', width: 800 });
    expect(callDigest('render', { width: 800, scene: 'a' })).to.equal(digest);
    expect(callDigest('render', { scene: 'b', width: 800 })).to.not.equal(digest);
    expect(callDigest('paint', { scene: 'a', width: 800 })).to.not.equal(digest);
    expect(callDigest('render', undefined)).to.equal(callDigest('render', {}));
  });
});
