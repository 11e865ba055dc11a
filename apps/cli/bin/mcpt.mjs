#!/usr/bin/env node
// The `mcpt` command: runs the TypeScript sources through tsx, like `pnpm cli`.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
