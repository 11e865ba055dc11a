// A schema thread (schema-threads.ts starts it): compiles published input schemas and validates arguments against
// them, off the event loop of the process that serves requests, within the heap its resourceLimits give it and the
// deadline its pool holds it to. It keeps the validators it compiled, by their schema's content, until its heap is half
// full; then the least recently used go first (they are compiled again when asked for).
import { getHeapStatistics } from 'node:v8';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
// Only the validation's module: a thread starts in a fraction of the time the whole vocabulary would take it.
import { compileArgumentsSchema, SchemaError, type ArgumentsValidator } from '@mcp-tasks/protocol/schema-validation';

/** The workerData that tells this module it was started as a schema thread (and not merely imported). */
export const SCHEMA_THREAD = 'mcp-tasks:schema-thread';

/** What the pool asks: compile `schema` (JSON) known as `key`, or also validate `args` against it. */
export type ThreadRequest =
  { kind: 'compile'; key: string; schema: string } | { kind: 'validate'; key: string; schema: string; args: unknown };
export type ThreadJob = ThreadRequest & { id: number };

/** What a thread answers: compiled (with the arguments and their defaults), the arguments' problems, or the schema's. */
export type ThreadReply =
  | { ok: true; unchecked: string[]; value?: unknown }
  | { ok: false; problems: string }
  | { ok: false; schemaError: string };
/** `evicted`: the keys of the validators the thread let go since its last answer. */
export type ThreadAnswer = ThreadReply & { id: number; evicted: string[] };

/** The share of the thread's heap its validators may fill before the least recently used are let go. */
const KEEP_HEAP_SHARE = 0.5;

function serve(port: NonNullable<typeof parentPort>): void {
  const validators = new Map<string, ArgumentsValidator>();
  let evicted: string[] = [];
  const validatorOf = (key: string, schema: string): ArgumentsValidator => {
    let validator = validators.get(key);
    if (validator) {
      validators.delete(key); // re-inserted last: the map's order is the order of use
    } else {
      validator = compileArgumentsSchema(JSON.parse(schema) as Record<string, unknown>);
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
  port.on('message', (job: ThreadJob) => {
    let answer: ThreadAnswer;
    try {
      const validator = validatorOf(job.key, job.schema);
      if (job.kind === 'compile') {
        answer = { id: job.id, evicted, ok: true, unchecked: [...validator.uncheckedPatterns] };
      } else {
        const check = validator(job.args);
        answer = check.ok
          ? { id: job.id, evicted, ok: true, unchecked: [], value: job.args }
          : { id: job.id, evicted, ok: false, problems: check.problems };
      }
    } catch (error) {
      const message = error instanceof SchemaError ? error.message : `it does not compile: ${String(error)}`;
      answer = { id: job.id, evicted, ok: false, schemaError: message };
    }
    evicted = [];
    port.postMessage(answer);
  });
  port.postMessage({ ready: true });
}

if (!isMainThread && parentPort && workerData === SCHEMA_THREAD) serve(parentPort);
