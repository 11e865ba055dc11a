// Content negotiation of a POST (responses.ts): which format an Accept header gets and whether it takes SSE. The
// verdict of the last header is kept; asked in any order, about any header, both answers must stay what they were
// when each call split the header itself (the reference functions below).
import { expect } from 'chai';
import { acceptsEventStream, replyFormat } from '@mcp-tasks/api/responses';

function referenceStreams(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => part.split(';')[0]?.trim().toLowerCase() === 'text/event-stream');
}

function referenceFormat(accept: string | undefined): 'json' | 'sse' | undefined {
  if (accept === undefined || accept.trim() === '') return 'json';
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  if (types.some((type) => type === 'application/json' || type === 'application/*' || type === '*/*')) return 'json';
  if (types.includes('text/event-stream')) return 'sse';
  return undefined;
}

const headers: (string | undefined)[] = [
  undefined,
  '',
  '   ',
  'application/json, text/event-stream',
  'application/json',
  'text/event-stream',
  'TEXT/Event-Stream; q=0.5',
  'text/event-streams',
  'application/*',
  '*/*',
  'text/html',
  'text/html, text/event-stream;q=0.1',
  ',',
  'application/json;charset=utf-8 , text/plain',
];

describe('Accept: reply format and SSE, with the last header kept', () => {
  it('answers as splitting each header did, for every header in every order', () => {
    for (const first of headers) {
      for (const second of headers) {
        for (const accept of [first, second, first]) {
          expect(replyFormat(accept), `format of ${String(accept)}`).to.equal(referenceFormat(accept));
          expect(acceptsEventStream(accept), `SSE in ${String(accept)}`).to.equal(referenceStreams(accept));
        }
        expect(acceptsEventStream(second)).to.equal(referenceStreams(second));
        expect(replyFormat(first)).to.equal(referenceFormat(first));
      }
    }
  });
});
