// docs/configuration.md is the settings reference (issue 39): every variable the api's and the worker's configuration
// schemas read has a row of its own there (a row may name several, or a family as `TASK_TTL_*`), with a default.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiEnvSchema } from '@mcp-tasks/api/config';
import { WorkerEnvSchema } from '@mcp-tasks/worker';
import { repoRoot } from '../support/processes.ts';

const PAGE = 'docs/configuration.md';

/** Each table row's variables (the backticked names of its first cell, `*` as a wildcard) and its other cells. */
function rowsOf(text: string): { names: RegExp[]; cells: string[] }[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [first = '', ...cells] = line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim());
      const names = [...first.matchAll(/`([A-Z][A-Z0-9_*]+)`/g)].map(
        (match) => new RegExp(`^${(match[1] ?? '').replaceAll('*', '[A-Z0-9_]+')}$`),
      );
      return { names, cells };
    });
}

describe('docs/configuration.md lists every setting with its default (issue 39)', () => {
  const rows = rowsOf(readFileSync(join(repoRoot, PAGE), 'utf8'));

  for (const [process, schema] of [
    ['api', ApiEnvSchema],
    ['worker', WorkerEnvSchema],
  ] as const) {
    it(`every variable of the ${process}'s configuration has a row with a default`, () => {
      const variables = Object.keys(schema.shape);
      expect(variables.length).to.be.above(20);
      const missing = variables.filter(
        (variable) =>
          !rows.some(
            ({ names, cells }) => names.some((name) => name.test(variable)) && cells.every((cell) => cell !== ''),
          ),
      );
      expect(missing, `variables of the ${process} without a row in ${PAGE}`).to.deep.equal([]);
    });
  }
});
