#!/usr/bin/env node
// Which spec rules (docs/spec-rules.md) a test title names: prints one row per rule and a total per checklist, and
// exits non-zero when a rule is neither named by a test title nor exempted there. test/unit/rule-coverage.test.ts
// runs the same check with mocha.
//
//   node scripts/rule-coverage.mjs            # the table and the totals
//   node scripts/rule-coverage.mjs --missing  # only the rules no test names
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const RULE_ID = /\b(?:T|C26|X)-[A-Z]+-\d+\b/g;
const EXEMPTION = ' — not applicable: ';

/** The rules of docs/spec-rules.md: `- ID: summary`, or `- ID: summary — not applicable: reason`. */
export function parseRules(text) {
  const rules = [];
  let checklist = '';
  for (const line of text.split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) checklist = heading[1].trim();
    const rule = /^- ((?:T|C26|X)-[A-Z]+-\d+): (.+)$/.exec(line);
    if (!rule) continue;
    const [summary, exemption] = rule[2].split(EXEMPTION);
    rules.push({
      id: rule[1],
      checklist,
      summary: summary.trim(),
      ...(exemption ? { exemption: exemption.trim() } : {}),
    });
  }
  return rules;
}

/**
 * The titles of `describe`/`context`/`it`/`specify` calls (with `.skip` too) whose first argument is a string
 * literal, a template literal included (its `${...}` parts kept as written).
 */
export function testTitles(source) {
  const titles = [];
  const call =
    /\b(?:describe|context|it|specify)(?:\.skip)?\(\s*(?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`)/g;
  for (const match of source.matchAll(call)) titles.push(match[1] ?? match[2] ?? match[3] ?? '');
  return titles;
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Rule ID -> the `file: title` of every test title naming it, over test/**\/*.test.ts. */
export function namedRules(root = ROOT) {
  const named = new Map();
  for (const file of testFiles(join(root, 'test'))) {
    for (const title of testTitles(readFileSync(file, 'utf8'))) {
      for (const id of new Set(title.match(RULE_ID) ?? [])) {
        const where = named.get(id) ?? [];
        where.push(`${relative(root, file)}: ${title}`);
        named.set(id, where);
      }
    }
  }
  return named;
}

/** Each rule with the titles naming it, and the per-checklist totals. */
export function coverage(root = ROOT) {
  const rules = parseRules(readFileSync(join(root, 'docs/spec-rules.md'), 'utf8'));
  const named = namedRules(root);
  const rows = rules.map((rule) => ({ ...rule, titles: named.get(rule.id) ?? [] }));
  const known = new Set(rules.map((rule) => rule.id));
  const unknown = [...named.keys()].filter((id) => !known.has(id)).sort();
  const checklists = [...new Set(rules.map((rule) => rule.checklist))].map((checklist) => {
    const of = rows.filter((row) => row.checklist === checklist);
    return {
      checklist,
      total: of.length,
      named: of.filter((row) => row.titles.length > 0).length,
      exempt: of.filter((row) => row.titles.length === 0 && row.exemption).length,
      missing: of.filter((row) => row.titles.length === 0 && !row.exemption).map((row) => row.id),
    };
  });
  return { rows, checklists, unknown };
}

function main() {
  const onlyMissing = process.argv.includes('--missing');
  const { rows, checklists, unknown } = coverage();
  const width = Math.max(...rows.map((row) => row.id.length));
  for (const row of rows) {
    const state = row.titles.length > 0 ? `${row.titles.length} test(s)` : row.exemption ? 'exempt' : 'MISSING';
    if (onlyMissing && state !== 'MISSING') continue;
    const note = row.titles.length === 0 && row.exemption ? `not applicable: ${row.exemption}` : row.summary;
    console.log(`${row.id.padEnd(width)}  ${state.padEnd(10)}  ${note.length > 100 ? `${note.slice(0, 99)}…` : note}`);
  }
  console.log('');
  for (const c of checklists) {
    console.log(
      `${c.checklist}: ${c.named}/${c.total} named by a test title, ${c.exempt} exempt, ${c.missing.length} missing`,
    );
  }
  if (unknown.length > 0)
    console.log(`Test titles name IDs that docs/spec-rules.md does not list: ${unknown.join(', ')}`);
  const missing = checklists.flatMap((c) => c.missing);
  if (missing.length > 0 || unknown.length > 0) process.exitCode = 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
