// Budgets, not shapes (issue 37; docs/catalog.md, "Budgets"; docs/security.md, "Trust boundaries"): what compiling a
// published schema and validating arguments against it may cost is bounded whatever the schema is. The cost model
// refuses the obviously expensive before anything compiles; what it does not rate cheap compiles and validates in a
// schema thread with a deadline and a heap of its own; verdicts are kept by content. Each attack of the issue is here
// with its figure.
import { expect } from 'chai';
import {
  CatalogEnvSchema,
  ConfigError,
  DEFAULT_SCHEMA_BUDGET,
  parseEnv,
  SchemaBudget,
  schemaBudgetOf,
  type SchemaBudgetSettings,
} from '@mcp-tasks/engine';
import {
  catalogEntryOf,
  checkArgumentsSchema,
  compileLinearPattern,
  DEFAULT_CATALOG_BOUNDS,
  defineTool,
  judgeArgumentsSchema,
  patternSizeBound,
  schemaCost,
  selectLiveTools,
  TaskSupport,
  type CatalogBounds,
  type CatalogEntry,
  type SchemaCost,
} from '@mcp-tasks/protocol';
import { z } from 'zod';

const bounds = DEFAULT_CATALOG_BOUNDS;

function entry(name: string, inputSchema: unknown): CatalogEntry {
  return {
    name,
    description: 'a tool',
    inputSchema: inputSchema as Record<string, unknown>,
    taskSupport: TaskSupport.Optional,
    retrySafe: true,
    queue: `ext-${name}`,
    external: true,
  };
}

function costOf(schema: Record<string, unknown>): SchemaCost {
  return schemaCost(checkArgumentsSchema(schema), JSON.stringify(schema).length);
}

/** The cost model's verdict on a schema (what compiles nothing), its reason when refused, and its CPU time. */
function judged(schema: unknown, within: CatalogBounds = bounds): { reason?: string; cost?: SchemaCost; ms: number } {
  const before = process.cpuUsage();
  const verdict = judgeArgumentsSchema(schema as Record<string, unknown>, within);
  const used = process.cpuUsage(before);
  const ms = (used.user + used.system) / 1000;
  return verdict.ok ? { cost: verdict.cost, ms } : { reason: verdict.reason, ms };
}

/** `$defs.d_i = {<keyword>: [{$ref: d_i+1}, {$ref: d_i+1}]}`: 2^depth paths through `depth` levels of refs. */
function refGraph(depth: number, keyword = 'anyOf'): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) {
    $defs[`d${i}`] = { [keyword]: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  }
  $defs[`d${depth}`] = { type: 'string' };
  return { $defs, type: 'object', properties: { x: { $ref: '#/$defs/d0' } } };
}

/** 1,600 properties, each with a distinct counted repetition: 11 M RE2 instructions in 63 KB (640 MB compiled). */
function patternFlood(count = 1600): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const c = String.fromCharCode(97 + (i % 26));
    properties[`p${i}`] = { pattern: `(?:${c}|${c}${c}|${c}${c}${c}){${1000 - Math.floor(i / 26)}}` };
  }
  return { type: 'object', properties };
}

const ordinaryTool = defineTool({
  name: 'ordinary',
  description: 'a small zod tool',
  inputSchema: z.object({
    text: z.string().min(1).max(200),
    count: z.number().int().min(1).max(10).default(1),
    id: z.uuid().optional(),
    mode: z.enum(['a', 'b']).nullable().optional(),
  }),
  taskSupport: TaskSupport.Optional,
  run: () => Promise.resolve({ content: [] }),
});

function budget(settings: Partial<SchemaBudgetSettings> = {}, within: Partial<CatalogBounds> = {}): SchemaBudget {
  return new SchemaBudget({ ...bounds, ...within }, { ...DEFAULT_SCHEMA_BUDGET, ...settings });
}

describe('schema budget: the cost model, before anything compiles', () => {
  it('bounds each pattern’s RE2 program from its text, never below what re2js compiles it to', () => {
    const formats = [z.uuid(), z.email(), z.iso.datetime(), z.ipv4(), z.ipv6(), z.cidrv6(), z.base64(), z.e164()];
    const patterns = [
      ...formats.map((format) => (z.toJSONSchema(format) as { pattern: string }).pattern),
      '(?:a|aa|aaa){1000}$',
      'a{1000}b{1000}c{1000}',
      '[\\s\\S]{0,1000}',
      '((ab){10}c){10}',
      '(a|b){2,5}',
      '^\\u{1F600}.\\s(?<n>ab)x{3,}$',
    ];
    for (const pattern of patterns) {
      const actual = compileLinearPattern(pattern).size;
      const bound = patternSizeBound(pattern);
      expect(bound, pattern)
        .to.be.at.least(actual)
        .and.at.most(actual * 2 + 10);
    }
    expect(patternSizeBound('(?:a|aa|aaa){1000}$')).to.equal(8004); // re2js: 7,003 instructions from 19 characters
    expect(patternSizeBound('(?=a)b')).to.equal(0); // never compiled: left to the tool's own validation
  });

  it('rates an ordinary zod schema cheap: one subschema per value, on the event loop', () => {
    const cost = costOf(catalogEntryOf(ordinaryTool).inputSchema);
    expect(cost.paths).to.be.at.most(4);
    expect(cost.patternSize).to.be.below(200);
    expect(cost.bytes + cost.patternSize).to.be.at.most(DEFAULT_SCHEMA_BUDGET.inlineMaxBytes);
  });

  it('attack 2: a 1.5 KB $ref/anyOf graph of depth 22 is refused at admission, in milliseconds (it took 11 s a call)', () => {
    const schema = refGraph(22);
    expect(JSON.stringify(schema).length).to.be.below(1600);
    const { reason, ms } = judged(schema);
    expect(reason).to.equal(
      'its inputSchema is over budget: up to 16777214 subschemas apply to one value of the arguments through $ref, ' +
        '$dynamicRef, anyOf, oneOf, allOf, not and if, more than CATALOG_MAX_SCHEMA_PATHS (10000)',
    );
    expect(ms).to.be.below(200);
    // oneOf is exponential even for valid input: the same count refuses it.
    expect(judged(refGraph(22, 'oneOf')).reason).to.match(/up to 16777214 subschemas .* CATALOG_MAX_SCHEMA_PATHS/);
    // Depth 10 stays within the budget (4,094 subschemas per value: a millisecond a call).
    expect(judged(refGraph(10)).cost?.paths).to.equal(4094);
  });

  it('counts paths that multiply as they descend into the arguments, but not a tree’s branches', () => {
    const doubling = { anyOf: [{ properties: { x: { $ref: '#' } } }, { properties: { x: { $ref: '#' } } }] };
    expect(judged(doubling).reason).to.match(/up to 7\.4e\+19 subschemas .* CATALOG_MAX_SCHEMA_PATHS/);
    const tree = {
      type: 'object',
      properties: { left: { $ref: '#' }, right: { $ref: '#' }, children: { type: 'array', items: { $ref: '#' } } },
    };
    expect(judged(tree).cost?.paths).to.equal(2); // a value and its `$ref`
  });

  it('refuses a $dynamicRef loop that only the dynamic scope closes (it made every call of its tool fail)', () => {
    const schema = {
      $id: 'https://example.com/root',
      $dynamicAnchor: 'n',
      allOf: [{ $ref: 's' }],
      $defs: {
        s: { $id: 's', $defs: { leaf: { $dynamicAnchor: 'n', type: 'string' } }, anyOf: [{ $dynamicRef: '#n' }] },
      },
    };
    expect(judged(schema).reason).to.match(/^its inputSchema cannot be used: it has a \$ref loop at .*\$dynamicRef/);
    // A $dynamicRef that descends (a tree of extensible nodes) is fine.
    const extensible = {
      $id: 'https://example.com/tree',
      $dynamicAnchor: 'node',
      type: 'object',
      properties: { children: { type: 'array', items: { $dynamicRef: '#node' } } },
    };
    expect(judged(extensible).cost?.paths).to.equal(2);
  });

  it('attack 1: 1,600 distinct counted repetitions (63 KB, 640 MB compiled) are refused in milliseconds, uncompiled', () => {
    const schema = patternFlood();
    expect(JSON.stringify(entry('attack', schema)).length).to.be.below(65_536);
    const { reason, ms } = judged(schema);
    expect(reason).to.match(
      /^its inputSchema is over budget: its patterns compile to up to \d+ RE2 instructions, more than CATALOG_MAX_PATTERN_SIZE \(20000\)$/,
    );
    expect(ms).to.be.below(1000);
  });
});

describe('schema budget: where schemas compile and arguments validate', function () {
  this.timeout(30_000);

  it('an ordinary zod schema compiles and validates on the event loop; no thread is started', async () => {
    const schemas = budget();
    try {
      const admission = await schemas.admit(catalogEntryOf(ordinaryTool));
      if (!admission.ok) throw new Error(admission.reason);
      expect(await schemas.validate(admission.entry, { text: 'hi' })).to.deep.equal({
        ok: true,
        value: { text: 'hi', count: 1 },
      });
      expect(schemas.threads.started).to.equal(0);
    } finally {
      await schemas.close();
    }
  });

  it('schemas compiled on the event loop stay within SCHEMA_INLINE_TOTAL_BYTES; the next ones compile in a thread', async () => {
    const { cost } = judged(catalogEntryOf(ordinaryTool).inputSchema);
    const schemas = budget({ inlineTotalBytes: (cost?.bytes ?? 0) + (cost?.patternSize ?? 0) });
    try {
      const first = await schemas.admit(catalogEntryOf(ordinaryTool));
      expect(first.ok && schemas.threads.started).to.equal(0);
      const second = await schemas.admit(
        entry('another', { type: 'object', properties: { other: { type: 'string' } } }),
      );
      expect(second.ok && schemas.threads.started).to.equal(1);
      if (!second.ok) throw new Error(second.reason);
      expect(await schemas.validate(second.entry, { other: 1 })).to.deep.equal({
        ok: false,
        problems: 'other: must be string',
      });
    } finally {
      await schemas.close();
    }
  });

  it('attack 3: a call with a 60 KB argument against (?:a|aa|aaa){1000}$ is refused at the deadline, in a thread', async () => {
    const schemas = budget({ validationTimeoutMs: 300 });
    try {
      const schema = { type: 'object', properties: { s: { type: 'string', pattern: '(?:a|aa|aaa){1000}$' } } };
      const admission = await schemas.admit(entry('slow', schema));
      if (!admission.ok) throw new Error(admission.reason);
      expect(schemas.threads.started).to.equal(1); // 8,006 instructions: not cheap to compile
      const started = performance.now();
      let loopTurns = 0;
      const ticker = setInterval(() => loopTurns++, 10);
      const verdict = await schemas.validate(admission.entry, { s: 'a'.repeat(60_000) + 'b' });
      clearInterval(ticker);
      const ms = performance.now() - started;
      expect(verdict).to.deep.equal({
        ok: false,
        problems: 'validating them took more than SCHEMA_VALIDATION_TIMEOUT_MS (300)',
      });
      // Held an api's event loop for 23 s; now its loop turns meanwhile, and the refusal comes at the deadline.
      expect(ms).to.be.below(300 + 2000);
      expect(loopTurns).to.be.at.least(10);
      // The thread was replaced: the next call is validated.
      expect(await schemas.validate(admission.entry, { s: 'b' })).to.deep.equal({
        ok: false,
        problems: 's: must match pattern "(?:a|aa|aaa){1000}$"',
      });
    } finally {
      await schemas.close();
    }
  });

  it('while a thread is busy, at most 1,000 validations wait for it; the next is refused at once', async () => {
    const schemas = budget({ validationTimeoutMs: 5000 });
    try {
      const schema = { type: 'object', properties: { s: { type: 'string', pattern: '(?:a|aa|aaa){1000}$' } } };
      const admission = await schemas.admit(entry('slow', schema));
      if (!admission.ok) throw new Error(admission.reason);
      const slow = schemas.validate(admission.entry, { s: 'a'.repeat(60_000) + 'b' });
      const waiting = Array.from({ length: 1000 }, () => schemas.validate(admission.entry, { s: 'b' }));
      const started = performance.now();
      expect(await schemas.validate(admission.entry, { s: 'b' })).to.deep.equal({ ok: false, busy: 1000 });
      expect(performance.now() - started).to.be.below(100);
      await schemas.close();
      expect((await Promise.all([slow, ...waiting])).every((verdict) => !verdict.ok)).to.equal(true);
    } finally {
      await schemas.close();
    }
  });

  it('a schema that fills its thread’s heap while compiling is quarantined, and the process lives on', async () => {
    const schemas = budget({ threadHeapMb: 24, compileTimeoutMs: 20_000 }, { maxPatternSize: 100_000_000 });
    try {
      const admission = await schemas.admit(entry('heavy', patternFlood(400)));
      expect(admission.ok).to.equal(false);
      expect(!admission.ok && admission.reason).to.equal(
        'its inputSchema is over budget: compiling it filled SCHEMA_THREAD_HEAP_MB (24)',
      );
    } finally {
      await schemas.close();
    }
  });

  it('a schema whose compile overruns SCHEMA_COMPILE_TIMEOUT_MS is quarantined', async () => {
    const schemas = budget({ compileTimeoutMs: 50 }, { maxPatternSize: 100_000_000 });
    try {
      const admission = await schemas.admit(entry('slow_compile', patternFlood(200)));
      expect(!admission.ok && admission.reason).to.equal(
        'its inputSchema is over budget: judging and compiling it took more than SCHEMA_COMPILE_TIMEOUT_MS (50)',
      );
    } finally {
      await schemas.close();
    }
  });

  it('attack 5: a relisting of unchanged entries (new objects) judges and compiles nothing again', async () => {
    const schemas = budget();
    let compiles = 0;
    const compile = schemas.threads.compile.bind(schemas.threads);
    schemas.threads.compile = (key, json, within) => {
      compiles++;
      return compile(key, json, within);
    };
    try {
      const schema = { type: 'object', properties: { s: { type: 'string', pattern: '(?:a|aa|aaa){600}' } } };
      const refused = refGraph(22);
      for (let listing = 0; listing < 3; listing++) {
        const copy = structuredClone(entry('listed', schema));
        expect((await schemas.admit(copy)).ok).to.equal(true);
        const started = performance.now();
        expect((await schemas.admit(structuredClone(entry('quarantined', refused)))).ok).to.equal(false);
        if (listing > 0) expect(performance.now() - started).to.be.below(50);
        // Validation finds the compiled schema from the new object too.
        expect(await schemas.validate(copy, { s: 'b' })).to.deep.equal({
          ok: false,
          problems: 's: must match pattern "(?:a|aa|aaa){600}"',
        });
      }
      expect(compiles).to.equal(1);
    } finally {
      await schemas.close();
    }
  });
});

describe('catalog bounds: a fair share per publisher', () => {
  it('attack 4: a publisher of 1,000 tools whose names sort first loses its own excess, never another’s tools', () => {
    const flood = Array.from({ length: 1000 }, (_, i) => `aaa_${String(i).padStart(4, '0')}`);
    const others = ['echo', 'sleep', 'zeta'];
    const publisherOf = (tool: string) =>
      tool.startsWith('aaa_') ? 'worker-flood' : tool === 'zeta' ? '' : 'worker-b';
    const { kept, leftOut } = selectLiveTools([...others, ...flood], publisherOf, bounds);
    expect(kept).to.include.members(others);
    expect(kept).to.have.length(503);
    expect(leftOut).to.have.length(500);
    expect(leftOut[0]).to.deep.equal({
      tool: 'aaa_0500',
      reason:
        "its publisher 'worker-flood' publishes more than CATALOG_MAX_TOOLS_PER_PUBLISHER (500) tools; its first 500 by name are read",
    });
    // Beyond CATALOG_MAX_TOOLS, each publisher takes one tool in turn.
    const small = selectLiveTools([...others, ...flood], publisherOf, { maxTools: 10, maxToolsPerPublisher: 500 });
    expect(small.kept).to.include.members(others);
    expect(small.kept.filter((tool) => tool.startsWith('aaa_'))).to.deep.equal(flood.slice(0, 7));
    expect(small.leftOut.find((r) => r.tool === 'aaa_0007')?.reason).to.equal(
      'more than CATALOG_MAX_TOOLS (10) tools are live; each publisher keeps an equal share of them, its first by name',
    );
  });
});

describe('schema budget: settings', () => {
  it('every budget is a setting with its documented default (docs/catalog.md, "Budgets")', () => {
    expect(schemaBudgetOf(parseEnv(CatalogEnvSchema, {}))).to.deep.equal({
      compileTimeoutMs: 2000,
      validationTimeoutMs: 1000,
      threadHeapMb: 128,
      threads: 1,
      inlineMaxBytes: 4096,
      inlineTotalBytes: 2_097_152,
      inlineMaxSteps: 1_000_000,
    });
    expect(
      schemaBudgetOf(parseEnv(CatalogEnvSchema, { SCHEMA_VALIDATION_TIMEOUT_MS: '250', SCHEMA_THREADS: '2' })),
    ).to.deep.include({ validationTimeoutMs: 250, threads: 2 });
    expect(() => parseEnv(CatalogEnvSchema, { SCHEMA_THREAD_HEAP_MB: '8' })).to.throw(
      ConfigError,
      /SCHEMA_THREAD_HEAP_MB="8"/,
    );
  });
});
