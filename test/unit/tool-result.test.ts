// The worker's check of what a tool returned: its hand-written fast path must agree with CallToolResultSchema.
import { expect } from 'chai';
import { CallToolResultSchema } from '@mcp-tasks/protocol';
import { checkToolResult } from '@mcp-tasks/worker/internals';

class Result {
  content = [{ type: 'text', text: 'x' }];
}

const cases: [string, unknown][] = [
  ['a text result', { content: [{ type: 'text', text: 'Waited 0s' }] }],
  ['no content blocks', { content: [] }],
  [
    'several blocks and extra keys',
    {
      content: [
        { type: 'text', text: 'a' },
        { type: 'image', data: 'x', mimeType: 'image/png' },
      ],
      extra: 1,
    },
  ],
  ['isError true', { content: [{ type: 'text', text: 'boom' }], isError: true }],
  ['isError undefined', { content: [{ type: 'text', text: 'a' }], isError: undefined }],
  ['isError not a boolean', { content: [], isError: 'yes' }],
  ['structuredContent', { content: [], structuredContent: { count: 3 } }],
  ['structuredContent not a record', { content: [], structuredContent: [1] }],
  ['_meta', { content: [], _meta: { a: 1 } }],
  ['_meta not a record', { content: [], _meta: 'x' }],
  ['no content', { structuredContent: {} }],
  ['content not an array', { content: 'text' }],
  ['a block without type', { content: [{ text: 'a' }] }],
  ['a block with a numeric type', { content: [{ type: 1 }] }],
  ['a null block', { content: [null] }],
  ['an array block', { content: [['text']] }],
  ['a hole in content', { content: [, { type: 'text' }] }], // eslint-disable-line no-sparse-arrays
  ['null', null],
  ['undefined', undefined],
  ['a string', 'done'],
  ['an array', [{ type: 'text' }]],
  ['a class instance', new Result()],
  ['a null-prototype object', Object.assign(Object.create(null) as object, { content: [{ type: 'text', text: 'a' }] })],
];

describe('tool result check (worker)', () => {
  for (const [name, value] of cases) {
    it(`T-LIFE-4: agrees with CallToolResultSchema on ${name}`, () => {
      const expected = CallToolResultSchema.safeParse(value);
      const actual = checkToolResult(value);
      expect(actual.success).to.equal(expected.success);
      if (expected.success && actual.success)
        expect(JSON.stringify(actual.data)).to.equal(JSON.stringify(expected.data));
      if (!expected.success && !actual.success) expect(actual.error.message).to.equal(expected.error.message);
    });
  }
});
