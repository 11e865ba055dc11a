// The Lua scripts' contract with Redis: a script must declare in KEYS every key it touches (Redis Cluster routes a
// script by its declared keys, and a proxy or a future Redis may refuse undeclared ones), and its file name and
// header say how many keys it takes and what it takes and returns (the model: BullMQ's commands folder).
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';

const LUA_DIR = new URL('../../packages/engine/src/lua/', import.meta.url);

/** Commands our scripts call whose first argument is their one key (DEL: our scripts give it one). */
const KEY_FIRST = new Set([
  // COPY: its destination is one of KEYS too (include/resume.lua).
  'COPY',
  'DEL',
  'EXISTS',
  'GET',
  'HDEL',
  'HEXISTS',
  'HGET',
  'HGETALL',
  'HINCRBY',
  'HKEYS',
  'HLEN',
  'HMGET',
  'HSET',
  'HSETNX',
  'HSTRLEN',
  'INCR',
  'LINDEX',
  'LLEN',
  'LPOP',
  'LPUSH',
  'LRANGE',
  'LREM',
  'LSET',
  'LTRIM',
  // MGET: every key it reads is one of KEYS too (checked below for the first).
  'MGET',
  'PEXPIRE',
  'PEXPIREAT',
  'PTTL',
  'RPUSH',
  'SADD',
  'SET',
  'SCARD',
  'SISMEMBER',
  'SMEMBERS',
  'SREM',
  'XADD',
  'XREVRANGE',
  'ZADD',
  'ZCARD',
  'ZPOPMIN',
  'ZRANGE',
  'ZRANGEBYSCORE',
  'ZREM',
  'ZRANGEBYSCORE',
  'ZREMRANGEBYSCORE',
  'ZSCORE',
]);
/** Commands that take no key (PUBLISH names a channel). */
const KEYLESS = new Set(['PUBLISH']);

interface Script {
  file: string;
  numberOfKeys: number;
  header: string;
  /** The body with its includes expanded, as scripts.ts loads it. */
  body: string;
  /** The body as written (without its includes). */
  own: string;
}

const INCLUDE_DIR = new URL('include/', LUA_DIR);
/** The TypeScript side of the verdicts' names (read as text: the engine's internals are not importable here). */
const TS_REPLIES = new URL('../script-replies.ts', LUA_DIR);

/** The names and values of a table of verdicts, one `NAME<sep> 'value',` a line. */
function table(text: string, separator: '=' | ':'): Record<string, string> {
  const line = new RegExp(`^\\s+([A-Z_]+)\\s?${separator} '([a-z-]+)',$`, 'gm');
  return Object.fromEntries([...text.matchAll(line)].map(([, name, value]) => [name as string, value as string]));
}
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;

interface Include {
  name: string;
  header: string;
  body: string;
}

function opened(url: URL, label: string): { header: string; body: string } {
  const text = readFileSync(url, 'utf8');
  const end = text.indexOf(']]');
  expect(text.startsWith('--[[') && end > 0, `${label} opens with a --[[ ... ]] header`).to.equal(true);
  return { header: text.slice(0, end), body: text.slice(end + 2) };
}

function includes(): Include[] {
  return readdirSync(INCLUDE_DIR)
    .filter((file) => file.endsWith('.lua'))
    .map((file) => ({ name: file.slice(0, -4), ...opened(new URL(file, INCLUDE_DIR), `include/${file}`) }));
}

/** `body` with its includes expanded (without their headers), each once, as scripts.ts expands them. */
function expand(body: string, included: Set<string>): string {
  return body.replace(INCLUDE, (_, name: string) => {
    if (included.has(name)) return '';
    included.add(name);
    return expand(opened(new URL(`${name}.lua`, INCLUDE_DIR), `include/${name}.lua`).body, included);
  });
}

function scripts(): Script[] {
  return readdirSync(LUA_DIR, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map(({ name: file }) => {
      const match = /^[a-z]+(?:-[a-z]+)*-(\d+)\.lua$/.exec(file);
      expect(match, `${file} is named <command>-<numberOfKeys>.lua`).to.not.equal(null);
      const { header, body } = opened(new URL(file, LUA_DIR), file);
      return { file, numberOfKeys: Number(match?.[1]), header, body: expand(body, new Set()), own: body };
    });
}

/** The calls of a script body: the command and its first argument as written. */
function calls(body: string): { command: string | undefined; first: string | undefined }[] {
  const found: { command: string | undefined; first: string | undefined }[] = [];
  for (const at of body.matchAll(/redis\.p?call\(/g)) {
    const rest = body.slice((at.index ?? 0) + at[0].length);
    const literal = /^\s*'([A-Z]+)'\s*(?:,\s*([^,)]+?)\s*[,)])?/.exec(rest);
    found.push({ command: literal?.[1], first: literal?.[2] });
  }
  return found;
}

/** A KEYS index named by the caller: a field of the argument table (`fair.keys.fairQueue`, `bucket.key`). */
const NAMED_INDEX = /^[a-zA-Z_]\w*(?:\.\w+)+$/;

/**
 * The local functions of a body that take a KEYS index as a parameter (`KEYS[key]` inside them), and the position
 * of that parameter.
 */
function keyIndexTakers(body: string): { name: string; position: number }[] {
  const takers: { name: string; position: number }[] = [];
  for (const match of body.matchAll(/local function (\w+)\(([^)]*)\)([\s\S]*?)\nend\n/g)) {
    const [, name, params, inner] = match as unknown as [string, string, string, string];
    const list = params.split(',').map((param) => param.trim());
    list.forEach((param, position) => {
      if (inner.includes(`KEYS[${param}]`)) takers.push({ name, position });
    });
  }
  return takers;
}

/** The arguments of each call of `name` in `body`, as written. */
function callsOf(name: string, body: string): string[][] {
  return [...body.matchAll(new RegExp(`(?<!function )(?<![\\w.])${name}\\(([^()]*)\\)`, 'g'))].map(([, args]) =>
    (args as string).split(',').map((arg) => arg.trim()),
  );
}

describe('the Lua scripts', () => {
  it('exist', () => {
    expect(scripts().length).to.be.above(5);
  });

  it('declare in KEYS every key they touch (Redis Cluster: a script may only use the keys it declares)', () => {
    for (const { file, body } of scripts()) {
      const found = calls(body);
      expect(found.length, file).to.be.above(0);
      for (const { command, first } of found) {
        expect(command, `${file}: every redis.call names its command literally`).to.be.a('string');
        if (KEYLESS.has(command as string)) continue;
        expect(KEY_FIRST.has(command as string), `${file}: ${command} is listed in this test with its key position`).to
          .be.true;
        expect(first, `${file}: the key of ${command} is one of KEYS, not a value read or passed in`).to.match(
          /^KEYS\[[^\]]+\]$/,
        );
      }
    }
  });

  it('name each KEYS index: a number within the count their file name says, or one the caller names', () => {
    for (const { file, numberOfKeys, body } of scripts()) {
      const takers = keyIndexTakers(body);
      const parameters = new Set<string>();
      for (const { name, position } of takers) {
        const inner = new RegExp(`local function ${name}\\(([^)]*)\\)`).exec(body)?.[1] ?? '';
        parameters.add(inner.split(',')[position]?.trim() as string);
      }
      /** An index as written: a literal within the count, a caller's name, or a parameter of a function above. */
      const check = (index: string, where: string) => {
        if (/^\d+$/.test(index)) {
          expect(Number(index), `${file}: ${where} is within its ${numberOfKeys} keys`).to.be.within(1, numberOfKeys);
          return;
        }
        expect(
          NAMED_INDEX.test(index) || parameters.has(index),
          `${file}: ${where} is a literal, a KEYS index the caller names, or a function's parameter; no key's ` +
            'position is computed in Lua',
        ).to.equal(true);
      };
      for (const [, index] of body.matchAll(/KEYS\[([^\]]+)\]/g)) check((index as string).trim(), `KEYS[${index}]`);
      // What a function taking a KEYS index is handed follows the same rules (a parameter: one such function
      // handing its own on, whose calls are checked in turn).
      for (const { name, position } of takers) {
        for (const args of callsOf(name, body)) check(args[position] as string, `${name}(${args.join(', ')})`);
      }
    }
  });

  it('take optional keys only when their header declares KEYS[<count + 1>...], and then by the names the caller gives', () => {
    for (const { file, numberOfKeys, header, body } of scripts()) {
      const declared = [...new Set([...header.matchAll(/KEYS\[(\d+)\.\.\.\]/g)].map(([, index]) => Number(index)))];
      expect(
        declared.every((index) => index === numberOfKeys + 1),
        `${file}: KEYS[${numberOfKeys + 1}...]`,
      ).to.equal(true);
      if (declared.length > 0) {
        const named = [...body.matchAll(/KEYS\[([^\]]+)\]/g)].some(([, index]) => NAMED_INDEX.test(index as string));
        expect(named, `${file}: its optional keys are named by the caller`).to.equal(true);
      }
    }
  });

  it('take one table of named arguments (ARGV[1], JSON), each listed in their header with the KEYS and return values', () => {
    for (const { file, numberOfKeys, header, own } of scripts()) {
      for (let i = 1; i <= numberOfKeys; i++) expect(header, `${file}: KEYS[${i}]`).to.include(`KEYS[${i}]`);
      expect(header, `${file}: KEYS[${numberOfKeys + 1}] is beyond its key count`).to.not.include(
        `KEYS[${numberOfKeys + 1}]`,
      );
      expect(
        [...own.matchAll(/ARGV\[[^\]]*\]/g)].map(([argument]) => argument),
        `${file}: ARGV`,
      ).to.deep.equal(['ARGV[1]']);
      expect(own, `${file}: decodes its arguments`).to.include('local args = cjson.decode(ARGV[1])');
      expect(header, `${file}: ARGV[1]`).to.match(/ARGV\[1\] the arguments, JSON:/);
      for (const [, name] of own.matchAll(/\bargs\.(\w+)/g)) {
        expect(header, `${file}: its argument ${name}`).to.match(new RegExp(`\\n\\s+${name}\\s`));
      }
      expect(header, `${file}: its return values`).to.match(/Returns/);
    }
  });

  it('share code through includes that document each function they define', () => {
    for (const { name, header, body } of includes()) {
      expect(body, `include/${name}.lua takes no ARGV: its callers hand it what it needs`).to.not.match(/ARGV/);
      for (const [, fn] of body.matchAll(/^local function (\w+)\(/gm)) {
        expect(header, `include/${name}.lua: ${fn as string}`).to.include(`${fn as string}(`);
      }
    }
  });

  it('name their verdicts: lua/include/replies.lua and script-replies.ts hold the same names and values', () => {
    const { body } = opened(new URL('replies.lua', INCLUDE_DIR), 'include/replies.lua');
    const lua = table(/local Reply = \{([\s\S]*?)\n\}/.exec(body)?.[1] ?? '', '=');
    const ts = table(
      /export const Reply = \{([\s\S]*?)\n\} as const;/.exec(readFileSync(TS_REPLIES, 'utf8'))?.[1] ?? '',
      ':',
    );
    expect(Object.keys(lua).length, 'include/replies.lua names verdicts').to.be.above(10);
    expect(ts).to.deep.equal(lua);
    expect(new Set(Object.values(lua)).size, 'each verdict has one name').to.equal(Object.keys(lua).length);
  });

  it('answer a verdict only by its name, first in the reply, and list in their header each verdict they answer', () => {
    const { body: replies } = opened(new URL('replies.lua', INCLUDE_DIR), 'include/replies.lua');
    const Reply = table(replies, '=');
    const units = [
      ...scripts().map(({ file, header, own }) => ({ label: file, header, own })),
      ...includes().map(({ name, header, body }) => ({ label: `include/${name}.lua`, header, own: body })),
    ];
    for (const { label, header, own } of units) {
      // A string answered as it is, or first in a table: a verdict not named. A number first in a table other than
      // a yes or no (1, 0) or a variable: a verdict code.
      expect(own, `${label}: answers a string of its own (a verdict: Reply.<NAME>)`).to.not.match(
        /return \{?\s*'|return \{?\s*"/,
      );
      expect(own, `${label}: answers a verdict code (a verdict: Reply.<NAME>)`).to.not.match(/return \{\s*(?:-|[2-9])/);
      const used = [...new Set([...own.matchAll(/\bReply\.(\w+)/g)].map((match) => match[1] as string))];
      if (used.length > 0) {
        expect(own, `${label}: includes the names it answers`).to.include('--- @include "replies"');
      }
      for (const name of used) {
        const value = Reply[name];
        expect(value, `${label}: Reply.${name} is a name of include/replies.lua`).to.be.a('string');
        expect(header, `${label}: its header lists the verdict "${value}" (Reply.${name})`).to.include(`"${value}"`);
      }
    }
  });
});
