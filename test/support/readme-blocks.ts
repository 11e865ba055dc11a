// The fenced blocks of the documentation that shows runnable code: the repository's README.md, the package's manual
// (apps/runner/README.md) and the pages of docs/ that the README's blocks moved to when it became a short front door
// (issue 39), each block with the marker comment before it (issue 31):
//   <!-- run: <how> [#id] -->   test/integration/readme-blocks.test.ts runs it, in a newcomer's project
//   <!-- same as: #id -->        the same text as the block run under that id
//   <!-- not run: <reason> -->   it cannot run here (docker, a cluster, a transcript, ...)
// <how> is `commands`, `file <name>`, `background`, `node <file>` or `module <file>`, with `; expect: <regex>` and
// `; ready: <regex>` options. test/integration/package.test.ts compiles the run blocks that use the package.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './processes.ts';

/** The manual first: the readme-blocks test runs its blocks as a newcomer's project, then the others on that system. */
export const READMES = [
  'apps/runner/README.md',
  'README.md',
  'docs/tools.md',
  'docs/clients.md',
  'docs/configuration.md',
  'docs/operating.md',
  'docs/deploying.md',
  'docs/tests.md',
];

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

/** A relative link of a Markdown page: `[text](target)` outside fenced blocks, with the line it is on. */
export interface Link {
  file: string;
  line: number;
  target: string;
}

/** The lines of a page outside its fenced blocks, each with its 1-based number. */
function proseLines(file: string): { line: number; text: string }[] {
  const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
  const prose: { line: number; text: string }[] = [];
  let fence: string | undefined;
  lines.forEach((text, i) => {
    const marker = /^(`{3,})/.exec(text)?.[1];
    if (fence === undefined && marker) fence = marker;
    else if (fence !== undefined && text.trim() === fence) fence = undefined;
    else if (fence === undefined) prose.push({ line: i + 1, text });
  });
  return prose;
}

/** The page's links to files of the repository (not `scheme:` addresses, not `#anchor`s of the page itself). */
export function relativeLinksOf(file: string): Link[] {
  return proseLines(file).flatMap(({ line, text }) =>
    [...text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1] ?? '')
      .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
      .map((target) => ({ file, line, target })),
  );
}

/**
 * The anchors of a page's headings as GitHub makes them: lower case, punctuation but `-` and `_` dropped, spaces as
 * `-`, and `-1`, `-2`, ... after a heading text seen before.
 */
export function headingAnchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(file)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}
