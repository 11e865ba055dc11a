// The project rule: every spec rule ID (docs/spec-rules.md) is named by a test title that proves it, or is exempted
// there with its reason. `node scripts/rule-coverage.mjs` prints the same check as a table.
import { expect } from 'chai';
import { coverage, parseRules, testTitles } from '../../scripts/rule-coverage.mjs';

describe('spec rule coverage (docs/spec-rules.md)', () => {
  const { rows, checklists, unknown } = coverage();

  it('lists the rules of both checklists, each ID once', () => {
    expect(checklists.map((c) => c.total)).to.deep.equal([56, 119]);
    const ids = rows.map((row) => row.id);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('every rule is named by a test title or exempted with a reason', () => {
    const missing = checklists.flatMap((c) => c.missing);
    expect(missing, `rules no test title names: ${missing.join(', ')}`).to.deep.equal([]);
  });

  it('test titles name only listed rule IDs (a typo would prove nothing)', () => {
    expect(unknown).to.deep.equal([]);
  });

  it('an exempted rule that a test now names should lose its exemption', () => {
    const stale = rows.filter((row) => row.exemption && row.titles.length > 0).map((row) => row.id);
    expect(stale).to.deep.equal([]);
  });

  it('reads rules, exemptions and titles in the shapes the files use', () => {
    expect(
      parseRules('## A\n- T-X-1: one\n## B\n- X-Y-2: two — not applicable: client side\n- not a rule'),
    ).to.deep.equal([
      { id: 'T-X-1', checklist: 'A', summary: 'one' },
      { id: 'X-Y-2', checklist: 'B', summary: 'two', exemption: 'client side' },
    ]);
    // The calls are spelt with a '~' that is taken out, so that the scan of this file does not read them as titles.
    const source = [
      "descr~ibe('T-A-1: a', () => {",
      '  i~t("T-B-2, X-C-3: b", async () => {});',
      '  i~t(`C26-D-4: ${n} c`, () => {});',
      "  i~t.skip('it\\'s T-E-5', () => {});",
      '  i~t(',
      "    'T-F-6: wrapped',",
      '  );',
      "  const x = fi~t('T-G-7');",
    ]
      .join('\n')
      .replaceAll('~', '');
    expect(testTitles(source)).to.deep.equal([
      'T-A-1: a',
      'T-B-2, X-C-3: b',
      'C26-D-4: ${n} c',
      "it\\'s T-E-5",
      'T-F-6: wrapped',
    ]);
  });
});
