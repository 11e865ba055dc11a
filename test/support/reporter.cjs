// Mocha's spec reporter plus the plain closing line CI reads: "N passed, N failed, N skipped". With
// MCPT_TEST_TIMINGS_OUT set, it also writes how long each test file took (ms, JSON): scripts/test.mjs balances its
// shards with them.
const { writeFileSync } = require('node:fs');
const { relative } = require('node:path');
const Mocha = require('mocha');

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const timingsOut = process.env.MCPT_TEST_TIMINGS_OUT;
    const timings = {};
    const started = new Map();
    if (timingsOut) {
      runner.on(EVENT_SUITE_BEGIN, (suite) => {
        if (suite.file && suite.parent?.root) started.set(suite, Date.now());
      });
      runner.on(EVENT_SUITE_END, (suite) => {
        const at = started.get(suite);
        if (at === undefined) return;
        const file = relative(process.cwd(), suite.file);
        timings[file] = (timings[file] ?? 0) + (Date.now() - at);
      });
    }
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = this.stats;
      if (timingsOut) writeFileSync(timingsOut, JSON.stringify(timings));
      process.stdout.write(`${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = SpecWithSummary;
