// The shape of a wire's dispatch table: each method is parsed from its params, handed to a use case (calls/), and
// its outcome rendered for the wire. Both revisions list their methods this way (rev2025-11-25/table.ts, rev2026-07-28/table.ts),
// so what a method does and how each wire says it can be read side by side.

/** One method of a wire, its three steps erased into one call for the table. */
export interface WireMethod<C, R> {
  readonly method: string;
  handle(params: Record<string, unknown> | undefined, context: C): Promise<R>;
}

export interface MethodSteps<C, I, O, R> {
  /** The params as the use case takes them; throws the wire's parse error. */
  parse(params: Record<string, unknown> | undefined, context: C): I;
  /** The use case (or the wire's composition of use cases). */
  run(input: I, context: C): Promise<O>;
  /** The outcome as the wire answers it. */
  render(output: O, context: C): R | Promise<R>;
}

export function wireMethod<C, I, O, R>(method: string, steps: MethodSteps<C, I, O, R>): WireMethod<C, R> {
  return {
    method,
    handle: async (params, context) => steps.render(await steps.run(steps.parse(params, context), context), context),
  };
}

/** A method with nothing to parse or run: a constant answer. */
export function constantMethod<C, R>(method: string, answer: (context: C) => R): WireMethod<C, R> {
  return { method, handle: (_params, context) => Promise.resolve(answer(context)) };
}

/** The table by method name; a name listed twice is a programming error. */
export function dispatchTable<C, R>(methods: readonly WireMethod<C, R>[]): ReadonlyMap<string, WireMethod<C, R>> {
  const table = new Map<string, WireMethod<C, R>>();
  for (const entry of methods) {
    if (table.has(entry.method)) throw new Error(`Method '${entry.method}' is listed twice`);
    table.set(entry.method, entry);
  }
  return table;
}
