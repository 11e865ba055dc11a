// Environment parsing shared by every process: one zod schema per app, parsed once into a frozen object, with
// errors that name the variable and what it accepts.
import { z } from 'zod';

export const RedisEnvSchema = z.object({
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  REDIS_PREFIX: z
    .string()
    .regex(
      /^(\{[A-Za-z0-9_-]+\}|[A-Za-z0-9_-]+)$/,
      'letters, digits, _ and -, optionally in {braces} for Redis Cluster',
    )
    .default('mcpt'),
});

export const LogEnvSchema = z.object({
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
});

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

export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): Readonly<z.infer<S>> {
  // Empty variables count as unset, as in most shells' `FOO= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return Object.freeze(parsed.data);
  const problems = parsed.error.issues.map((issue) => {
    const name = issue.path.join('.');
    return `  ${name}=${JSON.stringify(present[name] ?? '')}: ${issue.message}`;
  });
  throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
}
