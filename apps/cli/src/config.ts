// The CLI's configuration: the same Redis variables as the api and the workers, read once from the environment.
import { parseEnv, RedisEnvSchema } from '@mcp-tasks/engine';
import type { z } from 'zod';

export type CliConfig = Readonly<z.infer<typeof RedisEnvSchema>>;

export function loadCliConfig(env: NodeJS.ProcessEnv): CliConfig {
  return parseEnv(RedisEnvSchema, env);
}

/** The Redis URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
