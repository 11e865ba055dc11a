// The fenced blocks of the two READMEs (the repository's README.md and the package's manual, apps/runner/README.md),
// each with the marker comment before it (issue 31):
//   <!-- run: <how> [#id] -->   test/integration/readme-blocks.test.ts runs it, in a newcomer's project
//   <!-- same as: #id -->        the same text as the block run under that id
//   <!-- not run: <reason> -->   it cannot run here (docker, a cluster, a transcript, ...)
// <how> is `commands`, `file <name>`, `background`, `node <file>` or `module <file>`, with `; expect: <regex>` and
// `; ready: <regex>` options. test/integration/package.test.ts compiles the run blocks that use the package.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './processes.ts';

export const READMES = ['apps/runner/README.md', 'README.md'];

export type Marker =
  | { kind: 'run'; how: string; arg?: string; id?: string; expect?: RegExp; ready?: RegExp }
  | { kind: 'same'; id: string }
  | { kind: 'not-run'; reason: string };

export interface Block {
  file: string;
  /** The line of the opening fence (1-based): the block's first line is the next. */
  line: number;
  lang: string;
  text: string;
  marker?: Marker;
  markerError?: string;
}

function parseMarker(comment: string): Marker | string {
  const body = /^<!--\s*(.*?)\s*-->$/.exec(comment)?.[1];
  if (body === undefined) return 'no marker comment before it';
  const same = /^same as:\s*#([\w-]+)$/.exec(body);
  if (same?.[1]) return { kind: 'same', id: same[1] };
  const notRun = /^not run:\s*(.+)$/.exec(body);
  if (notRun?.[1]) return { kind: 'not-run', reason: notRun[1] };
  const runs = /^run:\s*(.+)$/.exec(body);
  if (!runs?.[1]) return `not a marker: ${comment}`;
  const [head = '', ...options] = runs[1].split(';').map((part) => part.trim());
  const words = head.split(/\s+/);
  const id = words.find((word) => word.startsWith('#'))?.slice(1);
  const [how = '', arg] = words.filter((word) => !word.startsWith('#'));
  if (!['commands', 'file', 'background', 'node', 'module'].includes(how)) return `unknown run kind: ${how}`;
  const option = (name: string) => {
    const found = options.find((part) => part.startsWith(`${name}:`));
    return found === undefined ? undefined : new RegExp(found.slice(name.length + 1).trim());
  };
  return {
    kind: 'run',
    how,
    ...(arg ? { arg } : {}),
    ...(id ? { id } : {}),
    expect: option('expect'),
    ready: option('ready'),
  };
}

/** The fenced blocks of a Markdown file, each with the comment on the last non-blank line before it. */
export function blocksOf(file: string): Block[] {
  const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\S*)\s*$/.exec(lines[i] ?? '');
    if (!open?.[1]) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith(open[1] ?? '```') && line.trim() === open[1]);
    if (end < 0) throw new Error(`${file}:${i + 1}: unclosed fence`);
    let before = i - 1;
    while (before >= 0 && (lines[before] ?? '').trim() === '') before--;
    const parsed = parseMarker((lines[before] ?? '').trim());
    const block: Block = { file, line: i + 1, lang: open[2] ?? '', text: lines.slice(i + 1, end).join('\n') + '\n' };
    if (typeof parsed === 'string') block.markerError = parsed;
    else block.marker = parsed;
    blocks.push(block);
    i = end;
  }
  return blocks;
}

export const where = (block: Block): string => `${block.file}:${block.line}`;
