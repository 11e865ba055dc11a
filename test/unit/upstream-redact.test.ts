// Issue 30: what an upstream writes to stderr (tokens, connection strings) reaches the worker's log masked, and a
// client never (docs/gateway.md, "What a client sees").
import { expect } from 'chai';
import { knownSecrets, redactSecrets } from '@mcp-tasks/worker/internals';

describe('upstream stderr redaction', () => {
  it('masks URL passwords, auth schemes, named secrets and JWTs, and keeps the rest of the line', () => {
    const line =
      'connecting to postgres://app:s3cr3t@db:5432/x with Authorization: Bearer abc.def-123 token=tok_123 ' +
      '"password": "hunter2" API_KEY: sk-live-42 jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abc done';
    const redacted = redactSecrets(line);
    for (const secret of ['s3cr3t', 'abc.def-123', 'tok_123', 'hunter2', 'sk-live-42', 'eyJhbGciOiJIUzI1NiJ9']) {
      expect(redacted, secret).not.to.include(secret);
    }
    expect(redacted).to.include('postgres://app:***@db:5432/x').and.include('done');
  });

  it('masks the values of the upstream’s own headers and environment wherever they appear', () => {
    const known = knownSecrets({ headers: { 'X-Api': 'plain-looking-value' }, env: { DB: 'another-value', N: '1' } });
    expect(known).to.deep.equal(['plain-looking-value', 'another-value']);
    expect(redactSecrets('using plain-looking-value and another-value now', known)).to.equal('using *** and *** now');
  });
});
