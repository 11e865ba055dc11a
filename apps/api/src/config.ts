// The api's configuration, read once from the environment (documented in README.md, "Configuration").
import { intFromEnv, LogEnvSchema, parseEnv, RedisEnvSchema } from '@mcp-tasks/engine';
import { z } from 'zod';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const ApiEnvSchema = RedisEnvSchema.extend(LogEnvSchema.shape).extend({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: intFromEnv(3000, { max: 65535 }),
  TASK_TTL_DEFAULT_MS: intFromEnv(HOUR, { min: 1000 }),
  TASK_TTL_MAX_MS: intFromEnv(24 * HOUR, { min: 1000 }),
  TASK_POLL_INTERVAL_MS: intFromEnv(1000, { min: 100 }),
  RESULT_RECHECK_MS: intFromEnv(5000, { min: 50 }),
  LIST_PAGE_SIZE: intFromEnv(50, { min: 1, max: 1000 }),
  MAX_BODY_BYTES: intFromEnv(1024 * 1024, { min: 1024 }),
  SESSION_IDLE_TTL_MS: intFromEnv(HOUR, { min: 1000 }),
  ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter(Boolean),
    ),
});

export type ApiConfig = Readonly<z.infer<typeof ApiEnvSchema>>;

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const config = parseEnv(ApiEnvSchema, env);
  if (config.TASK_TTL_DEFAULT_MS > config.TASK_TTL_MAX_MS) {
    throw new Error(
      `TASK_TTL_DEFAULT_MS (${config.TASK_TTL_DEFAULT_MS}) must not exceed TASK_TTL_MAX_MS (${config.TASK_TTL_MAX_MS})`,
    );
  }
  return config;
}
