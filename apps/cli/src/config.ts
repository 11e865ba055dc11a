// The CLI's configuration: the Redis and session variables of the api and the workers, read once from the
// environment (a cancel or retry writes to a session's event stream, whose lifetime they must agree on).
import { parseEnv, RedisEnvSchema, SessionEnvSchema } from '@mcp-tasks/engine';
import type { z } from 'zod';

const CliEnvSchema = RedisEnvSchema.extend(SessionEnvSchema.shape);

export type CliConfig = Readonly<z.infer<typeof CliEnvSchema>>;

export function loadCliConfig(env: NodeJS.ProcessEnv): CliConfig {
  return parseEnv(CliEnvSchema, env);
}
