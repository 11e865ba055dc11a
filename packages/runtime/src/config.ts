// Environment parsing shared by every process: one zod schema per app, parsed once into a frozen object, with
// errors that name the variable and what it accepts, and never show a secret's value.
import { z } from 'zod';
import { isSecretVariable, maskUrlPasswords } from './redact.ts';

/** A whole number from the environment, e.g. `intFromEnv(1000, { min: 1 })`. */
export function intFromEnv(defaultValue: number, bounds: { min?: number; max?: number } = {}) {
  return z.coerce
    .number()
    .int()
    .min(bounds.min ?? 0)
    .max(bounds.max ?? Number.MAX_SAFE_INTEGER)
    .default(defaultValue);
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** A variable and what is wrong with it. */
export interface EnvProblem {
  name: string;
  message: string;
}

/**
 * A rule across variables that one schema cannot say, checked after the schema passed: it gets the parsed data and
 * the variables as set, adds what it finds wrong to `problems`, and returns the data (changed, when a default
 * depends on another variable). The engine's Redis Cluster rules are one (packages/engine/src/config.ts).
 */
export type EnvRule = (data: unknown, present: Record<string, string | undefined>, problems: EnvProblem[]) => unknown;

/** Parses `env` with `schema` and then `rules`; every problem at once in one ConfigError. */
export function parseEnvWith<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
  rules: readonly EnvRule[] = [],
): Readonly<z.infer<S>> {
  // Empty variables count as unset, as in most shells' `FOO= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = schema.safeParse(present);
  const problems: EnvProblem[] = parsed.success
    ? []
    : parsed.error.issues.map((issue) => ({ name: String(issue.path[0] ?? ''), message: issue.message }));
  const data = parsed.success
    ? rules.reduce<unknown>((value, rule) => rule(value, present, problems), parsed.data)
    : undefined;
  if (problems.length === 0) return Object.freeze(data as z.infer<S>);
  const lines = problems.map(
    ({ name, message }) => `  ${shownValue(name, present[name])}: ${redactIn(message, name, present[name])}`,
  );
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}

function shownValue(name: string, value: string | undefined): string {
  if (value === undefined) return `${name} (unset)`;
  if (isSecretVariable(name)) return `${name} (value hidden, ${value.length} characters)`;
  return `${name}=${JSON.stringify(maskUrlPasswords(value))}`;
}

/** A validation message that quotes the rejected value (a custom check may) gets it hidden as well. */
function redactIn(message: string, name: string, value: string | undefined): string {
  const masked = maskUrlPasswords(message);
  return isSecretVariable(name) && value && value.length >= 4 ? masked.split(value).join('***') : masked;
}
