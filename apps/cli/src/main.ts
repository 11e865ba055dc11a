// Entry point of the operator CLI: `pnpm cli <command>` (or the `mcpt` bin).
import { runCli } from './cli.ts';

process.exitCode = await runCli(process.argv.slice(2));
