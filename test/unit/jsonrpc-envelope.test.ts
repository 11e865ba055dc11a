// The JSON-RPC envelope of a POST is judged once (asJsonRpcRequest): a hand check for the usual request, zod for
// the rest. Whatever the message, its verdict and data must be exactly JsonRpcRequestSchema's.
import { expect } from 'chai';
import { asJsonRpcRequest, JsonRpcRequestSchema } from '@mcp-tasks/protocol';

const messages: [string, string][] = [
  ['a request with params', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}'],
  ['a string id', '{"jsonrpc":"2.0","id":"a-1","method":"ping"}'],
  ['an id of 256 characters', `{"jsonrpc":"2.0","id":"${'x'.repeat(256)}","method":"ping"}`],
  ['an id of 257 characters', `{"jsonrpc":"2.0","id":"${'x'.repeat(257)}","method":"ping"}`],
  ['an id of 256 characters outside the BMP', `{"jsonrpc":"2.0","id":"${'😀'.repeat(128)}","method":"ping"}`],
  ['an id of 129 characters outside the BMP', `{"jsonrpc":"2.0","id":"${'😀'.repeat(129)}","method":"ping"}`],
  ['id 0', '{"jsonrpc":"2.0","id":0,"method":"ping"}'],
  ['id -0', '{"jsonrpc":"2.0","id":-0,"method":"ping"}'],
  ['a negative id', '{"jsonrpc":"2.0","id":-7,"method":"ping"}'],
  ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}'],
  ['the largest safe id', `{"jsonrpc":"2.0","id":${Number.MAX_SAFE_INTEGER},"method":"ping"}`],
  ['an unsafe id', '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}'],
  ['an id of 1e300', '{"jsonrpc":"2.0","id":1e300,"method":"ping"}'],
  ['a null id', '{"jsonrpc":"2.0","id":null,"method":"ping"}'],
  ['a boolean id', '{"jsonrpc":"2.0","id":true,"method":"ping"}'],
  ['no id (a notification)', '{"jsonrpc":"2.0","method":"notifications/initialized"}'],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"method":"ping"}'],
  ['no jsonrpc', '{"id":1,"method":"ping"}'],
  ['an empty method', '{"jsonrpc":"2.0","id":1,"method":""}'],
  ['a method of 256 characters', `{"jsonrpc":"2.0","id":1,"method":"${'m'.repeat(256)}"}`],
  ['a method of 257 characters', `{"jsonrpc":"2.0","id":1,"method":"${'m'.repeat(257)}"}`],
  ['a numeric method', '{"jsonrpc":"2.0","id":1,"method":5}'],
  ['params null', '{"jsonrpc":"2.0","id":1,"method":"ping","params":null}'],
  ['params an array', '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}'],
  ['params a string', '{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}'],
  ['empty params', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}'],
  ['params with __proto__', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"__proto__":{"x":1},"a":2}}'],
  ['a message with __proto__', '{"__proto__":{"id":2},"jsonrpc":"2.0","id":1,"method":"ping"}'],
  ['extra fields', '{"jsonrpc":"2.0","id":1,"method":"ping","extra":true,"result":{}}'],
  ['a response', '{"jsonrpc":"2.0","id":1,"result":{}}'],
  ['an array', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'],
  ['a string', '"ping"'],
  ['null', 'null'],
];

describe('asJsonRpcRequest: the JSON-RPC envelope judged once', () => {
  for (const [name, text] of messages) {
    it(`gives zod's verdict and data for ${name}`, () => {
      const zod = JsonRpcRequestSchema.safeParse(JSON.parse(text));
      const ours = asJsonRpcRequest(JSON.parse(text));
      if (!zod.success) {
        expect(ours).to.equal(undefined);
        return;
      }
      expect(ours).to.deep.equal(zod.data);
      expect(Object.keys(ours ?? {})).to.deep.equal(Object.keys(zod.data));
    });
  }

  it('hands the params on as they arrived, without a copy (they are parsed once more by the method)', () => {
    const message = JSON.parse('{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}') as {
      params: object;
    };
    expect(asJsonRpcRequest(message)?.params).to.equal(message.params);
  });
});
