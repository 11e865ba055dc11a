// Types of scripts/rule-coverage.mjs for the unit test that imports it.
export interface Rule {
  id: string;
  checklist: string;
  summary: string;
  exemption?: string;
}
export interface RuleRow extends Rule {
  titles: string[];
}
export interface ChecklistCoverage {
  checklist: string;
  total: number;
  named: number;
  exempt: number;
  missing: string[];
}
export const ROOT: string;
export function parseRules(text: string): Rule[];
export function testTitles(source: string): string[];
export function namedRules(root?: string): Map<string, string[]>;
export function coverage(root?: string): { rows: RuleRow[]; checklists: ChecklistCoverage[]; unknown: string[] };
