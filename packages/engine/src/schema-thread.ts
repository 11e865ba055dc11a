// A schema thread (schema-threads.ts starts it): judges published input schemas by the cost model, compiles them and
// validates arguments against them, off the event loop of the process that serves requests, within the heap its
// resourceLimits give it and the deadline its pool holds it to. It keeps the validators it compiled, by their schema's content, until its heap is half
// full; then the least recently used go first (they are compiled again when asked for).
import { getHeapStatistics } from 'node:v8';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
// Only the validation's modules: a thread starts in a fraction of the time the whole vocabulary would take it.
import { judgeArgumentsSchema, type SchemaBounds, type SchemaCost } from '@mcp-tasks/protocol/schema-cost';
import { compileArgumentsSchema, SchemaError, type ArgumentsValidator } from '@mcp-tasks/protocol/schema-validation';

/** The workerData that tells this module it was started as a schema thread (and not merely imported). */
export const SCHEMA_THREAD = 'mcp-tasks:schema-thread';

/** What the pool asks: judge and compile `schema` (JSON) known as `key`, or validate `args` against it. */
export type ThreadRequest =
  | { kind: 'compile'; key: string; schema: string; bounds: SchemaBounds }
  /** Compiles a schema admitted before (no judging): the step before a validation in a thread that lacks it. */
  | { kind: 'load'; key: string; schema: string }
  | { kind: 'validate'; key: string; schema: string; args: unknown };
export type ThreadJob = ThreadRequest & { id: number };

/**
 * What a thread answers: a schema judged and compiled (with its cost), arguments validated (with their defaults),
 * the arguments' problems, or why the schema is refused (in admission's words).
 */
export type ThreadReply =
  { ok: true; cost?: SchemaCost; value?: unknown } | { ok: false; problems: string } | { ok: false; refused: string };
/** `evicted`: the keys of the validators the thread let go since its last answer. */
export type ThreadAnswer = ThreadReply & { id: number; evicted: string[] };

/** The share of the thread's heap its validators may fill before the least recently used are let go. */
const KEEP_HEAP_SHARE = 0.5;

function serve(port: NonNullable<typeof parentPort>): void {
  const validators = new Map<string, ArgumentsValidator>();
  let evicted: string[] = [];
  const validatorOf = (key: string, schema: string, checked = false): ArgumentsValidator => {
    let validator = validators.get(key);
    if (validator) {
      validators.delete(key); // re-inserted last: the map's order is the order of use
    } else {
      validator = compileArgumentsSchema(JSON.parse(schema) as Record<string, unknown>, checked);
      makeRoomBeside(key);
    }
    validators.set(key, validator);
    return validator;
  };
  const makeRoomBeside = (key: string) => {
    const { used_heap_size: used, heap_size_limit: limit } = getHeapStatistics();
    if (used < limit * KEEP_HEAP_SHARE) return;
    for (const old of [...validators.keys()].slice(0, Math.ceil(validators.size / 2))) {
      if (old === key) continue;
      validators.delete(old);
      evicted.push(old);
    }
  };
  const answer = (job: ThreadJob): ThreadReply => {
    try {
      if (job.kind === 'validate') {
        const check = validatorOf(job.key, job.schema)(job.args);
        return check.ok ? { ok: true, value: job.args } : { ok: false, problems: check.problems };
      }
      if (job.kind === 'load') {
        validatorOf(job.key, job.schema, true);
        return { ok: true };
      }
      const judged = judgeArgumentsSchema(JSON.parse(job.schema) as Record<string, unknown>, job.bounds);
      if (!judged.ok) return { ok: false, refused: judged.reason };
      validatorOf(job.key, job.schema, true);
      return { ok: true, cost: judged.cost };
    } catch (error) {
      const why = error instanceof SchemaError ? error.message : `it does not compile: ${String(error)}`;
      return { ok: false, refused: `its inputSchema cannot be used: ${why}` };
    }
  };
  port.on('message', (job: ThreadJob) => {
    const reply: ThreadAnswer = { ...answer(job), id: job.id, evicted };
    evicted = [];
    port.postMessage(reply);
  });
  port.postMessage({ ready: true });
}

if (!isMainThread && parentPort && workerData === SCHEMA_THREAD) serve(parentPort);
