// One mocha run for unit and integration tests; TypeScript runs through tsx.
module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/support/root-hooks.ts'],
  reporter: 'test/support/reporter.cjs',
  'forbid-only': true,
  timeout: 20000,
  slow: 2000,
  exit: false,
};
