// Operators' scheduling settings (docs/scheduling.md): per-tool overrides of what tools declare, principals' weights
// and the cap on runs per principal. Read from SCHEDULING (inline JSON) and/or SCHEDULING_FILE (a JSON file; the
// inline value wins field by field), once per process, by workers (limits, retries, timeouts, caps) and api replicas
// (weights, which order the queue when a task is created).
import { readFileSync } from 'node:fs';
import { describeIssues, mergeScheduling, SchedulingSchema, type Scheduling } from '@mcp-tasks/protocol';
import { z } from 'zod';
import { ConfigError, intFromEnv } from '@mcp-tasks/runtime';

export const SchedulingFileSchema = z.strictObject({
  /** Per tool name; `*` applies to every tool, under the tool's own entry. */
  tools: z.record(z.string(), SchedulingSchema).default({}),
  /**
   * A principal's share of each tool's starts against the others' (default 1): 2 starts twice as often. Keyed by the
   * principal as tasks' owners name it; a bare name ("alice") would match no task and weigh nothing, silently.
   */
  weights: z.record(z.string(), z.number().min(0.01).max(100)).default({}),
});
export type SchedulingFile = z.infer<typeof SchedulingFileSchema>;

export const SchedulingEnvSchema = z.object({
  /** Inline JSON, the shape of SchedulingFileSchema. */
  SCHEDULING: z.string().optional(),
  /** Path of a JSON file of that shape. */
  SCHEDULING_FILE: z.string().optional(),
  /** The most runs one principal has at once over all tools (0: no cap). */
  MAX_RUNNING_PER_OWNER: intFromEnv(0),
  /**
   * A task held back by a per-principal cap is started again when one of the principal's runs ends; this is the
   * sweep that catches a wake-up lost with a crashed worker.
   */
  OWNER_CAP_RECHECK_MS: intFromEnv(5000, { min: 50 }),
});
export type SchedulingEnv = z.infer<typeof SchedulingEnvSchema>;

/** The compiled settings: one lookup per tool. */
export class SchedulingSettings {
  constructor(
    readonly file: SchedulingFile,
    readonly maxRunningPerOwner: number | undefined,
    readonly ownerCapRecheckMs = 5000,
  ) {}

  static none(): SchedulingSettings {
    return new SchedulingSettings({ tools: {}, weights: {} }, undefined);
  }

  /** The operator's override for a tool: its own entry over `*`. */
  overrideFor(tool: string): Scheduling | undefined {
    const all = this.file.tools['*'];
    const own = this.file.tools[tool];
    if (!all && !own) return undefined;
    return mergeScheduling(all, own);
  }

  weightOf(principal: string): number {
    return this.file.weights[principal] ?? 1;
  }
}

export function loadSchedulingSettings(env: SchedulingEnv, readFile = readFileText): SchedulingSettings {
  const fromFile = env.SCHEDULING_FILE !== undefined ? parse('SCHEDULING_FILE', readFile(env.SCHEDULING_FILE)) : {};
  const inline = env.SCHEDULING !== undefined ? parse('SCHEDULING', env.SCHEDULING) : {};
  const tools: Record<string, Scheduling> = { ...fromFile.tools };
  for (const [name, override] of Object.entries(inline.tools ?? {}))
    tools[name] = mergeScheduling(tools[name], override);
  return new SchedulingSettings(
    { tools, weights: { ...fromFile.weights, ...inline.weights } },
    env.MAX_RUNNING_PER_OWNER > 0 ? env.MAX_RUNNING_PER_OWNER : undefined,
    env.OWNER_CAP_RECHECK_MS,
  );
}

function readFileText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`SCHEDULING_FILE=${JSON.stringify(path)}: cannot read it (${(error as Error).message})`);
  }
}

function parse(variable: string, text: string): Partial<SchedulingFile> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${variable}: not JSON (${(error as Error).message})`);
  }
  const parsed = SchedulingFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      `${variable}: ${describeIssues(parsed.error)}; expected {"tools": {"<tool or *>": {"concurrency": 2, ` +
        `"rateLimit": {"max": 10, "perMs": 1000}, "retry": {...}, "timeoutMs": 60000, "maxRunningPerOwner": 1}}, ` +
        `"weights": {"principal:key:<name>": 2}}`,
    );
  }
  const bare = Object.keys(parsed.data.weights).find((principal) => !/^principal:./.test(principal));
  if (bare !== undefined) {
    throw new ConfigError(
      `${variable}: weights[${JSON.stringify(bare)}]: a weight names a principal as tasks' owners do ` +
        '(mcpt list): principal:key:<name> or principal:jwt:<issuer>|<subject>',
    );
  }
  return parsed.data;
}
