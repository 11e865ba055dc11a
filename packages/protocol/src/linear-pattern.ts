// The regular expressions of published JSON Schemas (`pattern`, `patternProperties`, `propertyNames`) run on RE2's
// linear-time engine, not on the platform's backtracking RegExp: a pattern such as `^(a+)+$` and thirty `a`s would
// otherwise hold the event loop for seconds (docs/catalog.md, "Schema validation"). JSON Schema patterns are written
// in ECMAScript's dialect; the few escapes whose meaning RE2 spells differently are rewritten. What no linear-time
// engine can run (lookaround, backreferences: zod's `z.emoji()`, `z.hostname()`, `z.iso.duration()` use them) is not
// checked here: it matches anything, and is left to the tool's own validation (our workers parse arguments with the
// tool's zod schema; an upstream server or an external consumer validates its own), which the caller is told.
import { RE2JS } from 're2js';

/** A pattern that is not a regular expression at all. */
export class PatternError extends Error {
  override readonly name: string = 'PatternError';
}

/** A valid ECMAScript pattern that no linear-time engine runs (lookaround, backreferences). */
export class NonLinearPatternError extends PatternError {
  override readonly name = 'NonLinearPatternError';
}

/** ECMAScript's `\s`: its WhiteSpace and LineTerminator characters (RE2's `\s` is ASCII only). */
const WHITESPACE =
  '\\t\\n\\x{0b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** ECMAScript's `.` without the `s` flag: anything but a line terminator (RE2's excludes `\n` only). */
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/** The pattern in RE2's syntax with ECMAScript's meaning, or PatternError saying what RE2 cannot run. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\') {
      const { text, length } = escapeAt(pattern, i, inClass);
      out += text;
      i += length - 1;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      const negated = pattern[i + 1] === '^';
      // `[]` and `[^]` are a class in ECMAScript, but RE2 reads the `]` as a member.
      if (pattern[i + (negated ? 2 : 1)] === ']') throw new PatternError('an empty character class ([] or [^])');
      inClass = true;
      out += negated ? '[^' : '[';
      if (negated) i++;
      continue;
    }
    if (c === '(' && pattern[i + 1] === '?' && isLookaround(pattern.slice(i + 2, i + 4))) {
      throw new NonLinearPatternError('lookahead and lookbehind ((?=, (?!, (?<=, (?<!) cannot run in linear time');
    }
    out += c === '.' ? DOT : c;
  }
  return out;
}

function isLookaround(next: string): boolean {
  return next.startsWith('=') || next.startsWith('!') || next === '<=' || next === '<!';
}

function escapeAt(pattern: string, at: number, inClass: boolean): { text: string; length: number } {
  const next = pattern[at + 1];
  if (next === undefined) throw new PatternError('a lone backslash at its end');
  if (next === 'u') return unicodeEscape(pattern, at);
  if (next === 's') return { text: inClass ? WHITESPACE : `[${WHITESPACE}]`, length: 2 };
  if (next === 'S' && !inClass) return { text: `[^${WHITESPACE}]`, length: 2 };
  if (/[1-9]/.test(next) || (next === 'k' && pattern[at + 2] === '<')) {
    throw new NonLinearPatternError('backreferences cannot run in linear time');
  }
  if (next === 'b' && inClass) return { text: '\\x{8}', length: 2 };
  return { text: `\\${next}`, length: 2 };
}

/** `\uXXXX`, a surrogate pair of them, or `\u{X...}` as RE2's `\x{...}`. */
function unicodeEscape(pattern: string, at: number): { text: string; length: number } {
  const braced = /^\\u\{([0-9A-Fa-f]{1,6})\}/.exec(pattern.slice(at, at + 10));
  if (braced) return { text: `\\x{${braced[1]}}`, length: braced[0].length };
  const unit = (offset: number) => {
    const hex = /^\\u([0-9A-Fa-f]{4})/.exec(pattern.slice(offset, offset + 6));
    return hex ? parseInt(hex[1] as string, 16) : undefined;
  };
  const high = unit(at);
  if (high === undefined) throw new PatternError(`an invalid escape at ${at}: \\u takes 4 hex digits or {hex}`);
  const low = unit(at + 6);
  if (high >= 0xd800 && high <= 0xdbff && low !== undefined && low >= 0xdc00 && low <= 0xdfff) {
    const codePoint = (high - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
    return { text: `\\x{${codePoint.toString(16)}}`, length: 12 };
  }
  return { text: `\\x{${high.toString(16)}}`, length: 6 };
}

/** A compiled pattern with RegExp's `test` (an unanchored search), in time linear in the text. */
export interface LinearPattern {
  test(text: string): boolean;
  toString(): string;
  /** Its RE2 program's size in instructions: a test costs up to this many steps per character of the text. */
  readonly size: number;
}

export function compileLinearPattern(pattern: string): LinearPattern {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(toRe2Syntax(pattern));
  } catch (error) {
    if (error instanceof PatternError) throw error;
    throw new PatternError((error as Error).message);
  }
  return { test: (text) => compiled.test(text), toString: () => `/${pattern}/`, size: compiled.programSize() };
}

/** Patterns the engine met that it left unchecked, while a schema compiles (schema-validation.ts collects them). */
let unchecked: string[] | undefined;

/** Runs `compile` and answers the patterns it left to the tool's own validation (NonLinearPatternError). */
export function collectUncheckedPatterns<T>(compile: () => T): { value: T; unchecked: string[] } {
  const outer = unchecked;
  unchecked = [];
  try {
    const value = compile();
    return { value, unchecked };
  } finally {
    unchecked = outer;
  }
}

/**
 * ajv's `code.regExp` engine (its RegExpEngine: a function with a `code` for standalone code, which we do not
 * generate). ajv calls it with the `u` flag, which RE2 always has. A pattern no linear-time engine runs matches
 * anything here (see above).
 */
export const linearRegExpEngine = Object.assign(
  (pattern: string): LinearPattern => {
    try {
      return compileLinearPattern(pattern);
    } catch (error) {
      if (!(error instanceof NonLinearPatternError)) throw error;
      unchecked?.push(pattern);
      return { test: () => true, toString: () => `/${pattern}/`, size: 0 };
    }
  },
  { code: 're2js' },
);

/** RE2's instructions around any pattern: the match, the failure and the unanchored search's `.*?` loop. */
const PROGRAM_OVERHEAD = 3;

/**
 * An upper bound on the size of the RE2 program a pattern compiles to (re2js' `programSize()`), read from its text
 * without compiling it: RE2 runs in time proportional to the program's size times the text's length, and compiling
 * takes time and memory in proportion to it (`(?:a|aa|aaa){1000}` is 219 bytes in an entry and 7,003 instructions;
 * 1,600 such patterns held 640 MB). A counted repetition multiplies what it repeats; an atom, a class or an escape is
 * one instruction, a capture two more, each alternative one. A pattern no linear-time engine runs, or none at all,
 * weighs nothing here: it is never compiled to a program (collectUncheckedPatterns; compile refuses the latter).
 */
export function patternSizeBound(pattern: string): number {
  try {
    toRe2Syntax(pattern);
  } catch {
    return 0;
  }
  interface Group {
    /** Sizes of the finished alternatives. */
    done: number;
    /** The alternative being read, and its last atom (what a quantifier repeats). */
    sequence: number;
    last: number;
    alternatives: number;
    capture: boolean;
  }
  const open = (capture: boolean): Group => ({ done: 0, sequence: 0, last: 0, alternatives: 0, capture });
  const sizeOf = (group: Group) => group.done + group.sequence + group.alternatives + (group.capture ? 2 : 0);
  const stack: Group[] = [open(false)];
  const top = () => stack[stack.length - 1] as Group;
  const atom = (size: number) => {
    top().sequence += size;
    top().last = size;
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\') {
      i += escapeLength(pattern, i) - 1;
      atom(1);
    } else if (c === '[') {
      i = classEnd(pattern, i);
      atom(1);
    } else if (c === '(') {
      const capture = pattern[i + 1] !== '?' || (pattern[i + 2] === '<' && !'=!'.includes(pattern[i + 3] ?? ''));
      if (pattern[i + 1] === '?') i = pattern.indexOf(pattern[i + 2] === '<' ? '>' : ':', i);
      stack.push(open(capture));
    } else if (c === ')' && stack.length > 1) {
      atom(sizeOf(stack.pop() as Group));
    } else if (c === '|') {
      const group = top();
      group.done += group.sequence;
      group.sequence = group.last = 0;
      group.alternatives++;
    } else if (c === '*' || c === '+' || c === '?') {
      top().sequence += 1;
      top().last = 0;
      if (pattern[i + 1] === '?') i++;
    } else {
      const repeat = c === '{' ? /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24)) : null;
      if (!repeat) {
        atom(1);
        continue;
      }
      const min = Number(repeat[1]);
      const max = repeat[2] === undefined ? min : repeat[3] === '' ? Math.max(min, 1) : Number(repeat[3]);
      const group = top();
      group.sequence += group.last * (Math.max(max, 1) - 1) + Math.max(max - min, 0) + (repeat[3] === '' ? 1 : 0);
      group.last = 0;
      i += repeat[0].length - 1;
      if (pattern[i + 1] === '?') i++;
    }
  }
  while (stack.length > 1) atom(sizeOf(stack.pop() as Group));
  return sizeOf(stack[0] as Group) + PROGRAM_OVERHEAD;
}

/** How many characters the escape at `at` takes (`\u{1F600}`, `\uXXXX`, `\xHH`, `\p{L}`, `\cX`, `\n`, ...). */
function escapeLength(pattern: string, at: number): number {
  const braced = /^\\[upP]\{[^}]*\}/.exec(pattern.slice(at, at + 64));
  if (braced) return braced[0].length;
  const next = pattern[at + 1];
  if (next === 'u') return 6;
  if (next === 'x') return 4;
  if (next === 'c') return 3;
  return 2;
}

/** The index of the `]` that closes the class opened at `at` (escapes inside it skipped). */
function classEnd(pattern: string, at: number): number {
  let i = at + 1;
  if (pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  for (; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return pattern.length;
}
