// The CLI's configuration: the Redis, session and catalog variables of the api and the workers, read once from the
// environment (a cancel or retry writes to a session's event stream, whose lifetime they must agree on; the catalog's
// grace period and bounds decide which tools it sees, as they do for the api: docs/catalog.md).
import { CatalogEnvSchema, parseEnv, RedisEnvSchema, SessionEnvSchema, SignalEnvSchema } from '@mcp-tasks/engine';
import type { z } from 'zod';

// `mcpt signal` keeps events within the bounds the api keeps them in (EVENT_MAX_BYTES, EVENTS_MAX_KEPT).
const CliEnvSchema = RedisEnvSchema.extend(SessionEnvSchema.shape)
  .extend(CatalogEnvSchema.shape)
  .extend(SignalEnvSchema.shape);

export type CliConfig = Readonly<z.infer<typeof CliEnvSchema>>;

export function loadCliConfig(env: NodeJS.ProcessEnv): CliConfig {
  return parseEnv(CliEnvSchema, env);
}
