// The tool catalog's entry (docs/catalog.md): what a worker publishes about a tool it serves, so that the api can
// list it, validate its arguments and route its calls without the tool's code. Part of the job contract: consumers in
// other languages publish the same JSON (docs/job-contract.md, schema in docs/job-contract.schema.json).
import { z } from 'zod';
import { queueOfTool } from './external.ts';
export { callDigest, canonicalJson } from './canonical-json.ts';
import { mergeScheduling, SchedulingSchema, type Scheduling } from './scheduling.ts';
import { declaredScheduling, taskSupportOf, TaskSupport, type ToolDefinition } from './tool.ts';

const JsonObject = z.record(z.string(), z.unknown());

export const CatalogEntrySchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/),
    title: z.string().optional(),
    description: z.string(),
    inputSchema: JsonObject,
    outputSchema: JsonObject.optional(),
    annotations: JsonObject.optional(),
    taskSupport: z.enum([TaskSupport.Forbidden, TaskSupport.Optional, TaskSupport.Required]),
    retrySafe: z.boolean(),
    /** ToolDefinition.inputFirst; present only when true. */
    inputFirst: z.literal(true).optional(),
    /** The BullMQ queue whose consumers run the tool's jobs. */
    queue: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[^:]+$/),
    /** The queue is read by a consumer outside the runner (job contract): its job outcomes settle the tasks. */
    external: z.boolean(),
    /** How calls are scheduled (docs/scheduling.md): the definition's settings with the operator's overrides. */
    scheduling: SchedulingSchema.optional(),
  })
  .refine((entry) => entry.external || entry.queue === toolQueueName(entry.name), {
    message: "a tool the runner's workers serve has the queue 'tool-<name>'",
    path: ['queue'],
  });
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;

/** The queue of a tool the runner's own workers run: one queue per tool, so a job reaches only a worker that has it. */
export function toolQueueName(tool: string): string {
  return `tool-${tool}`;
}

/**
 * The entry a worker publishes for one of its tools; `override` is the operator's scheduling override for it
 * (docs/scheduling.md), laid over what the definition declares.
 */
export function catalogEntryOf(tool: ToolDefinition, override?: Scheduling): CatalogEntry {
  const external = queueOfTool(tool);
  const scheduling = mergeScheduling(declaredScheduling(tool), override);
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.inputSchema, 'input'),
    ...(tool.outputSchema ? { outputSchema: jsonSchemaOf(tool.outputSchema, 'output') } : {}),
    ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
    taskSupport: taskSupportOf(tool),
    retrySafe: tool.retrySafe ?? true,
    ...(tool.inputFirst === true ? { inputFirst: true as const } : {}),
    queue: external ?? toolQueueName(tool.name),
    external: external !== undefined,
    // Absent when nothing is set, so that entries of tools without settings stay as earlier versions published them.
    ...(Object.keys(scheduling).length > 0 ? { scheduling } : {}),
  };
}

/** tools/list's rendering of an entry. */
export function listingOfEntry(entry: CatalogEntry): Record<string, unknown> {
  return {
    name: entry.name,
    ...(entry.title !== undefined ? { title: entry.title } : {}),
    description: entry.description,
    inputSchema: entry.inputSchema,
    ...(entry.outputSchema !== undefined ? { outputSchema: entry.outputSchema } : {}),
    ...(entry.annotations !== undefined ? { annotations: entry.annotations } : {}),
    execution: { taskSupport: entry.taskSupport },
  };
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io }) as Record<string, unknown>;
  return json;
}
