// One flat config for the workspace: type-aware TypeScript rules plus import hygiene.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.data/**',
      '**/dist/**',
      'packages/*/scripts/*.mjs',
      'apps/*/scripts/*.mjs',
      'examples/**',
      '**/*.cjs',
      'scripts/*.mjs',
      'apps/*/bin/*.mjs',
      // Plain Node code loaded into third-party server processes by tests (no tsx there).
      'test/fixtures/**/*.mjs',
      // Trees that break the import rules on purpose, for scripts/check-imports.mjs's tests.
      'test/fixtures/imports/**',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'import-x/no-relative-packages': 'error',
      'no-restricted-imports': [
        'error',
        { patterns: ['**/packages/*/src/**', '**/apps/*/src/**', '@mcp-tasks/*/src/**'] },
      ],
    },
  },
  {
    // The dashboard's browser scripts: JavaScript modules without types, run by the pages next to them, with the
    // browser's globals and uPlot's (loaded by the page before them), and no Node.
    files: ['apps/api/src/admin-assets/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['apps/api/src/admin-assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        fetch: 'readonly',
        FormData: 'readonly',
        URLSearchParams: 'readonly',
        setInterval: 'readonly',
        uPlot: 'readonly',
      },
    },
  },
  {
    // The engine speaks typed errors (packages/protocol/src/errors.ts); only the api's wires turn them into
    // JSON-RPC codes (apps/api/src/wire-errors.ts).
    files: ['packages/engine/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: ['**/packages/*/src/**', '**/apps/*/src/**', '@mcp-tasks/*/src/**'],
          paths: [
            {
              name: '@mcp-tasks/protocol',
              importNames: ['ProtocolError', 'ErrorCode'],
              message: 'The engine throws typed errors (errors.ts); the api maps them to JSON-RPC codes.',
            },
          ],
        },
      ],
    },
  },
  {
    // The process plumbing touches no Redis: what reads or writes Redis is the engine's (docs/architecture.md).
    files: ['packages/runtime/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: ['**/packages/*/src/**', '**/apps/*/src/**', '@mcp-tasks/*/src/**'],
          paths: [
            { name: 'ioredis', message: "Redis is the engine's (@mcp-tasks/engine), not the runtime's." },
            { name: 'bullmq', message: "Redis is the engine's (@mcp-tasks/engine), not the runtime's." },
          ],
        },
      ],
    },
  },
  {
    // Small functions that read top-down (docs/architecture.md); tests' describe blocks are exempt.
    files: ['apps/*/src/**/*.ts', 'packages/*/src/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120 }] },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
