// The Lua scripts' contract with Redis: a script must declare in KEYS every key it touches (Redis Cluster routes a
// script by its declared keys, and a proxy or a future Redis may refuse undeclared ones), and its file name and
// header say how many keys it takes and what it takes and returns (the model: BullMQ's commands folder).
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';

const LUA_DIR = new URL('../../packages/engine/src/lua/', import.meta.url);

/** Commands our scripts call whose first argument is their one key (DEL: our scripts give it one). */
const KEY_FIRST = new Set([
  'DEL',
  'EXISTS',
  'GET',
  'HDEL',
  'HEXISTS',
  'HGET',
  'HGETALL',
  'HINCRBY',
  'HMGET',
  'HSET',
  'HSETNX',
  'INCR',
  'LLEN',
  // MGET: every key it reads is one of KEYS too (checked below for the first).
  'MGET',
  'PEXPIRE',
  'PEXPIREAT',
  'PTTL',
  'SADD',
  'SCARD',
  'SISMEMBER',
  'SMEMBERS',
  'SREM',
  'XADD',
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
  body: string;
}

const INCLUDE_DIR = new URL('include/', LUA_DIR);

/** Code shared by scripts (`--- @include "<name>"`, expanded by scripts.ts), without its header. */
function include(name: string): string {
  const text = readFileSync(new URL(`${name}.lua`, INCLUDE_DIR), 'utf8');
  const end = text.indexOf(']]');
  expect(text.startsWith('--[[') && end > 0, `include/${name}.lua opens with a --[[ ... ]] header`).to.equal(true);
  return text.slice(end + 2);
}

function scripts(): Script[] {
  return readdirSync(LUA_DIR, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map(({ name: file }) => {
      const match = /^[a-z]+(?:-[a-z]+)*-(\d+)\.lua$/.exec(file);
      expect(match, `${file} is named <command>-<numberOfKeys>.lua`).to.not.equal(null);
      const text = readFileSync(new URL(file, LUA_DIR), 'utf8');
      const end = text.indexOf(']]');
      expect(text.startsWith('--[[') && end > 0, `${file} opens with a --[[ ... ]] header`).to.equal(true);
      const body = text.slice(end + 2).replace(/^--- @include "([a-z-]+)"$/gm, (_, name: string) => include(name));
      return { file, numberOfKeys: Number(match?.[1]), header: text.slice(0, end), body };
    });
}

/**
 * The functions of the includes that take the index of their first key (`local function name(k, ...)`): a script
 * hands them keys by that index, so the index follows the rules of a KEYS index.
 */
function keyIndexTakers(body: string): string[] {
  return [...body.matchAll(/local function (\w+)\(k,/g)].map(([, name]) => name as string);
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

describe('the Lua scripts', () => {
  it('exist', () => {
    expect(scripts().length).to.be.above(5);
  });

  it('declare in KEYS every key they touch (Redis Cluster: a script may only use the keys it declares)', () => {
    for (const { file, numberOfKeys, body } of scripts()) {
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
      for (const [, index] of body.matchAll(/KEYS\[(\d+)\]/g)) {
        expect(Number(index), `${file}: KEYS[${index}] is within the ${numberOfKeys} keys its name says`).to.be.within(
          1,
          numberOfKeys,
        );
      }
    }
  });

  it('take keys beyond those their name counts only as KEYS[<count> + i], declared as KEYS[<count + 1>...]', () => {
    for (const { file, numberOfKeys, header, body } of scripts()) {
      const beyond = new RegExp(`KEYS\\[${numberOfKeys}\\s*\\+\\s*[^\\]]+\\]`, 'g');
      const uses = [...body.matchAll(beyond)];
      // Keys handed by index to a function of an include: a number within the count, or <count> + i beyond it.
      for (const name of keyIndexTakers(body)) {
        for (const [, index] of body.matchAll(new RegExp(`[^\\w]${name}\\(([^,]+),`, 'g'))) {
          const first = (index as string).trim();
          if (first === 'k' || first.startsWith('k ')) continue;
          if (/^\d+$/.test(first)) {
            expect(Number(first), `${file}: ${name}(${first}, ...) is within its ${numberOfKeys} keys`).to.be.within(
              1,
              numberOfKeys,
            );
          } else {
            expect(first, `${file}: ${name}(${first}, ...) hands keys as <count> + i`).to.match(
              new RegExp(`^${numberOfKeys}\\s*\\+`),
            );
            uses.push([first] as unknown as RegExpExecArray);
          }
        }
      }
      const declared = [...new Set([...header.matchAll(/KEYS\[(\d+)\.\.\.\]/g)].map(([, index]) => Number(index)))];
      expect(
        declared,
        `${file}: declares KEYS[${numberOfKeys + 1}...] exactly when it uses keys beyond the named`,
      ).to.deep.equal(uses.length > 0 ? [numberOfKeys + 1] : []);
    }
  });

  it('list their KEYS, ARGV and return values in their header', () => {
    for (const { file, numberOfKeys, header, body } of scripts()) {
      for (let i = 1; i <= numberOfKeys; i++) expect(header, `${file}: KEYS[${i}]`).to.include(`KEYS[${i}]`);
      expect(header, `${file}: KEYS[${numberOfKeys + 1}] is beyond its key count`).to.not.include(
        `KEYS[${numberOfKeys + 1}]`,
      );
      for (const [argument] of body.matchAll(/ARGV\[\d+\]/g))
        expect(header, `${file}: ${argument}`).to.include(argument);
      expect(header, `${file}: its return values`).to.match(/Returns/);
    }
  });
});
