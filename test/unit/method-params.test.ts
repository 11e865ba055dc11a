// The params of tools/call and of the task-id methods are judged by hand in the usual case (parseCallToolParams,
// parseTaskId): whatever the params, the verdict, the data and the error must be exactly the schema's.
import { expect } from 'chai';
import {
  CallToolParamsSchema,
  parseCallToolParams,
  parseParams,
  parseTaskId,
  ProtocolError,
  TaskIdParamsSchema,
} from '@mcp-tasks/protocol';

const callParams: [string, string | undefined][] = [
  ['no params', undefined],
  ['empty params', '{}'],
  ['a name only', '{"name":"wait"}'],
  ['a task-augmented call', '{"name":"wait","arguments":{"seconds":1},"task":{}}'],
  ['a ttl', '{"name":"wait","arguments":{},"task":{"ttl":60000}}'],
  ['ttl 0', '{"name":"wait","task":{"ttl":0}}'],
  ['ttl -0', '{"name":"wait","task":{"ttl":-0}}'],
  ['ttl 1.0', '{"name":"wait","task":{"ttl":1.0}}'],
  ['the largest safe ttl', `{"name":"wait","task":{"ttl":${Number.MAX_SAFE_INTEGER}}}`],
  ['an unsafe ttl', '{"name":"wait","task":{"ttl":9007199254740992}}'],
  ['a ttl of 1e300', '{"name":"wait","task":{"ttl":1e300}}'],
  ['a negative ttl', '{"name":"wait","task":{"ttl":-1}}'],
  ['a fractional ttl', '{"name":"wait","task":{"ttl":1.5}}'],
  ['a string ttl', '{"name":"wait","task":{"ttl":"5"}}'],
  ['a null ttl', '{"name":"wait","task":{"ttl":null}}'],
  ['task fields besides ttl', '{"name":"wait","task":{"ttl":5,"other":[1]}}'],
  ['task null', '{"name":"wait","task":null}'],
  ['task an array', '{"name":"wait","task":[]}'],
  ['task true', '{"name":"wait","task":true}'],
  ['an empty name', '{"name":""}'],
  ['a name of 256 characters', `{"name":"${'n'.repeat(256)}"}`],
  ['a name of 257 characters', `{"name":"${'n'.repeat(257)}"}`],
  ['a name of 129 characters outside the BMP', `{"name":"${'😀'.repeat(129)}"}`],
  ['a numeric name', '{"name":5}'],
  ['arguments null', '{"name":"wait","arguments":null}'],
  ['arguments an array', '{"name":"wait","arguments":[1,2]}'],
  ['arguments a string', '{"name":"wait","arguments":"x"}'],
  ['nested arguments', '{"name":"wait","arguments":{"b":{"c":[1,{"d":null}]},"a":2,"1":3}}'],
  ['arguments with __proto__', '{"name":"wait","arguments":{"__proto__":{"x":1},"a":2}}'],
  ['params with __proto__', '{"__proto__":{"name":"x"},"name":"wait"}'],
  ['a task with __proto__', '{"name":"wait","task":{"__proto__":{"ttl":-1},"ttl":5}}'],
  ['_meta with __proto__', '{"name":"wait","_meta":{"__proto__":{"progressToken":{}}}}'],
  ['a string progress token', '{"name":"wait","_meta":{"progressToken":"p-1"}}'],
  ['a numeric progress token', '{"name":"wait","_meta":{"progressToken":1.5}}'],
  ['an object progress token', '{"name":"wait","_meta":{"progressToken":{}}}'],
  ['a null progress token', '{"name":"wait","_meta":{"progressToken":null}}'],
  ['other _meta fields', '{"name":"wait","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}'],
  ['_meta null', '{"name":"wait","_meta":null}'],
  ['_meta a string', '{"name":"wait","_meta":"m"}'],
  ['extra fields', '{"name":"wait","extra":{"a":1},"more":[true]}'],
  ['params an array', '[{"name":"wait"}]'],
  ['params a string', '"wait"'],
  ['params null', 'null'],
];

/** What parseParams answers: its data, or the message of the ProtocolError it throws. */
function outcome(parse: () => unknown): { data: unknown } | { error: string } {
  try {
    return { data: parse() };
  } catch (error) {
    expect(error).to.be.instanceOf(ProtocolError);
    return { error: (error as ProtocolError).message };
  }
}

const parsed = (text: string | undefined): unknown => (text === undefined ? undefined : JSON.parse(text));

describe('parseCallToolParams: tools/call params judged by hand when usual', () => {
  for (const [name, text] of callParams) {
    it(`gives the schema's verdict, data and error for ${name}`, () => {
      const zod = outcome(() => parseParams(CallToolParamsSchema, parsed(text), 'tools/call'));
      const ours = outcome(() => parseCallToolParams(parsed(text)));
      expect(ours).to.deep.equal(zod);
      if ('data' in ours && 'data' in zod) {
        const args = (value: unknown) => (value as { arguments?: object }).arguments;
        expect(Object.keys(args(ours.data) ?? {})).to.deep.equal(Object.keys(args(zod.data) ?? {}));
      }
    });
  }

  it('hands a usual call on as it arrived, without a copy', () => {
    const params = parsed('{"name":"wait","arguments":{"seconds":1},"task":{"ttl":5},"_meta":{"progressToken":1}}');
    expect(parseCallToolParams(params)).to.equal(params);
  });
});

const taskIdParams: [string, string | undefined][] = [
  ['no params', undefined],
  ['empty params', '{}'],
  ['a task id', '{"taskId":"7d1c0f3e-5b4a-4c59-9d1e-2f0a8b6c4e21"}'],
  ['a task id and other fields', '{"taskId":"t","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u"}}}'],
  ['an empty task id', '{"taskId":""}'],
  ['a task id of 256 characters', `{"taskId":"${'t'.repeat(256)}"}`],
  ['a task id of 257 characters', `{"taskId":"${'t'.repeat(257)}"}`],
  ['a numeric task id', '{"taskId":5}'],
  ['a null task id', '{"taskId":null}'],
  ['params with __proto__', '{"__proto__":{"taskId":"u"},"taskId":"t"}'],
  ['a task id only in __proto__', '{"__proto__":{"taskId":"u"}}'],
  ['params an array', '[{"taskId":"t"}]'],
  ['params a string', '"t"'],
  ['params null', 'null'],
];

describe('parseTaskId: the task id of tasks/get, tasks/result and tasks/cancel', () => {
  for (const [name, text] of taskIdParams) {
    it(`gives the schema's verdict, task id and error for ${name}`, () => {
      const zod = outcome(() => parseParams(TaskIdParamsSchema, parsed(text), 'tasks/result').taskId);
      const ours = outcome(() => parseTaskId(parsed(text), 'tasks/result'));
      expect(ours).to.deep.equal(zod);
    });
  }
});
