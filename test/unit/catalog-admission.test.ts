// Catalog entries as untrusted input (docs/catalog.md, "Bounds" and "Schema validation"; docs/security.md): bounds
// of size and depth at publish and at read, schemas that compile in isolation, patterns in linear time, $ref loops.
import { expect } from 'chai';
import {
  catalogBoundsOf,
  CatalogEnvSchema,
  ConfigError,
  DEFAULT_SCHEMA_BUDGET,
  parseEnv,
  SchemaBudget,
} from '@mcp-tasks/engine';
import {
  admitEntryToPublish,
  admitPublishedEntry,
  CatalogEntryError,
  compileArgumentsSchema,
  DEFAULT_CATALOG_BOUNDS,
  defineTool,
  jsonTextDepth,
  ownCatalogEntry,
  SchemaError,
  TaskSupport,
  valueDepth,
  type CatalogEntry,
} from '@mcp-tasks/protocol';
import { z } from 'zod';

const bounds = DEFAULT_CATALOG_BOUNDS;

function entry(name: string, inputSchema: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: 'a tool',
    inputSchema,
    taskSupport: 'optional',
    retrySafe: true,
    queue: `ext-${name}`,
    external: true,
    ...extra,
  };
}

function nested(levels: number): string {
  return '{"a":'.repeat(levels) + '{}' + '}'.repeat(levels);
}

function refusal(name: string, raw: string): string {
  const admission = admitPublishedEntry(name, raw, bounds);
  if (admission.ok) throw new Error(`admitted ${name}`);
  return admission.reason;
}

/** CPU time of `work`, which does not depend on how busy the machine is. */
function cpuMs(work: () => void): number {
  const before = process.cpuUsage();
  work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

describe('catalog admission: bounds at read', () => {
  it('refuses an entry nested 20,000 levels deep without recursing on it, naming CATALOG_MAX_DEPTH', () => {
    const raw = (levels: number) =>
      JSON.stringify(entry('deep', {})).replace('"inputSchema":{}', `"inputSchema":${nested(levels)}`);
    expect(refusal('deep', raw(20_000))).to.match(/more than CATALOG_MAX_ENTRY_BYTES/); // 120 KB
    expect(refusal('deep', raw(5_000))).to.equal('it is nested more than CATALOG_MAX_DEPTH (64) levels deep');
    expect(admitPublishedEntry('deep', raw(62), bounds).ok).to.equal(true);
    expect(refusal('deep', raw(63))).to.match(/CATALOG_MAX_DEPTH/);
    expect(jsonTextDepth('{"a":"{[{[","b":[[]]}', 100)).to.equal(3); // brackets in strings do not count
    expect(jsonTextDepth('{"a":"\\"{"}', 100)).to.equal(1);
  });

  it('refuses an entry larger than CATALOG_MAX_ENTRY_BYTES, counted in UTF-8 bytes', () => {
    const big = JSON.stringify(entry('big', { type: 'object', description: 'x'.repeat(20_000_000) }));
    expect(refusal('big', big)).to.match(
      /^it is 20000\d{3} bytes of JSON, more than CATALOG_MAX_ENTRY_BYTES \(65536\)$/,
    );
    const wide = JSON.stringify(entry('wide', { type: 'object', description: 'é'.repeat(40_000) }));
    expect(wide.length).to.be.below(65_536);
    expect(refusal('wide', wide)).to.match(/more than CATALOG_MAX_ENTRY_BYTES/);
  });

  it('refuses what is not a catalog entry: not JSON, not an object, fields of the wrong type, a name not its own', () => {
    expect(refusal('x', 'not json')).to.equal('it is not JSON');
    expect(refusal('x', '[1,2]')).to.match(/^it is not a catalog entry/);
    expect(refusal('x', 'null')).to.match(/^it is not a catalog entry/);
    expect(refusal('x', JSON.stringify(entry('x', 'a string')))).to.match(/inputSchema: /);
    expect(refusal('x', JSON.stringify({ ...entry('x', {}), name: 42 }))).to.match(/name: /);
    expect(refusal('x', JSON.stringify({ ...entry('x', {}), taskSupport: 'always' }))).to.match(/taskSupport: /);
    expect(refusal('echo', JSON.stringify(entry('evil', {})))).to.equal(
      "it is published under the name 'echo' but names the tool 'evil'",
    );
  });

  it('admits a well-formed entry within the bounds, with its validator compiled', async () => {
    const schemas = new SchemaBudget(bounds, DEFAULT_SCHEMA_BUDGET);
    const raw = JSON.stringify(entry('fine', { type: 'object', properties: { n: { type: 'integer', default: 2 } } }));
    const admission = await schemas.admitPublished('fine', raw);
    if (!admission.ok) throw new Error(admission.reason);
    const value: Record<string, unknown> = {};
    expect(await schemas.validate(admission.entry, value)).to.deep.equal({ ok: true, value: { n: 2 } }); // defaults
    expect(value).to.deep.equal({}); // applied to a copy
    expect(await schemas.validate(admission.entry, { n: 'two' })).to.deep.equal({
      ok: false,
      problems: 'n: must be integer',
    });
    await schemas.close();
  });

  it('measures a value’s depth iteratively, also one that refers to itself', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(valueDepth(cyclic, 64)).to.equal(65);
    expect(valueDepth({ a: [{ b: 1 }] }, 64)).to.equal(3);
  });
});

describe('catalog admission: at publish (a worker’s own tools)', () => {
  const tool = (name: string, schema: z.ZodObject) =>
    defineTool({
      name,
      description: 'd',
      inputSchema: schema,
      taskSupport: TaskSupport.Optional,
      run: () => Promise.resolve({ content: [] }),
    });

  it('a zod schema a few thousand levels deep is refused with an error that names the tool and the bound', () => {
    let schema: z.ZodType = z.string();
    for (let i = 0; i < 3000; i++) schema = z.object({ a: schema });
    let error: unknown;
    try {
      ownCatalogEntry(tool('deep_tool', schema as z.ZodObject), bounds);
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(CatalogEntryError);
    expect((error as Error).message).to.match(/^Tool 'deep_tool' cannot be published to the tool catalog: /);
    expect((error as Error).message).to.match(/CATALOG_MAX_DEPTH/);
  });

  it('an entry deeper than CATALOG_MAX_DEPTH, or larger than CATALOG_MAX_ENTRY_BYTES, names the bound', () => {
    let schema: z.ZodType = z.string();
    for (let i = 0; i < 40; i++) schema = z.object({ a: schema });
    expect(() => ownCatalogEntry(tool('forty', schema as z.ZodObject), bounds)).to.throw(
      "Tool 'forty' cannot be published to the tool catalog: it is nested more than CATALOG_MAX_DEPTH (64) levels deep",
    );
    const wide = z.object({ text: z.string().describe('x'.repeat(70_000)) });
    expect(() => ownCatalogEntry(tool('wide', wide), bounds)).to.throw(
      /Tool 'wide' .* more than CATALOG_MAX_ENTRY_BYTES \(65536\)/,
    );
    expect(ownCatalogEntry(tool('fine', z.object({ n: z.number() })), bounds).name).to.equal('fine');
  });

  it('a tool whose zod formats publish lookahead patterns is published: its worker checks them with zod', () => {
    const formats = z.object({ e: z.emoji(), h: z.hostname(), d: z.iso.duration() });
    const published = ownCatalogEntry(tool('formats', formats), bounds);
    expect(compileArgumentsSchema(published.inputSchema).uncheckedPatterns).to.have.length.above(0);
  });

  it('an upstream’s entry is checked as at read (the schema budget compiles it)', async () => {
    const upstream = entry('up', { type: 'object', properties: { s: { type: 'string', pattern: '[a' } } });
    expect(admitEntryToPublish(upstream as CatalogEntry, bounds).ok).to.equal(true); // nothing compiled yet
    const schemas = new SchemaBudget(bounds, DEFAULT_SCHEMA_BUDGET);
    const admission = await schemas.admit(upstream as CatalogEntry);
    await schemas.close();
    expect(admission.ok).to.equal(false);
    expect(!admission.ok && admission.reason).to.match(/inputSchema cannot be used: it does not compile: /);
  });
});

describe('schema validation: patterns in linear time', () => {
  it('^(a+)+$ against thirty a’s and a ! takes milliseconds (the backtracking engine: seconds)', () => {
    const validate = compileArgumentsSchema({
      type: 'object',
      properties: { s: { type: 'string', pattern: '^(a+)+$' } },
      patternProperties: { '^(b+)+$': { type: 'string' } },
      propertyNames: { pattern: '^((c|[a-z])+)+$' },
    });
    const hostile = 'a'.repeat(30) + '!';
    let check: ReturnType<typeof validate> = { ok: true };
    const used = cpuMs(() => {
      check = validate({ s: hostile });
      validate({ ['b'.repeat(30) + '!']: 'x' });
      validate({ ['c'.repeat(5000) + '!']: 'x' });
      validate({ s: 'a'.repeat(1_000_000) + '!' });
    });
    expect(check).to.deep.equal({ ok: false, problems: 's: must match pattern "^(a+)+$"' });
    expect(used).to.be.below(500);
    expect(validate({ s: 'aaa' })).to.deep.equal({ ok: true });
  });

  it('keeps ECMAScript’s meaning where RE2 spells it differently: \\u escapes, \\s, the dot', () => {
    const validate = compileArgumentsSchema({
      type: 'object',
      properties: {
        u: { type: 'string', pattern: '^\\u0041\\uD83D\\uDE00\\u{1F600}$' },
        s: { type: 'string', pattern: '^\\s$' },
        dot: { type: 'string', pattern: '^.$' },
      },
    });
    expect(validate({ u: 'A😀😀' })).to.deep.equal({ ok: true });
    expect(validate({ s: '\u00a0' })).to.deep.equal({ ok: true });
    expect(validate({ dot: '😀' })).to.deep.equal({ ok: true });
    expect(validate({ dot: '\u2028' }).ok).to.equal(false);
    const inClass = compileArgumentsSchema({ type: 'string', pattern: '^[\\s\\d]+\\\\u$' });
    expect(inClass('\u00a0 1\\u')).to.deep.equal({ ok: true }); // \s in a class; an escaped backslash before u
  });

  it('leaves lookaround and backreferences, which no linear-time engine runs, to the tool’s own validation, and says which', () => {
    for (const pattern of ['^(?=.{1,253}$)[a-z.]+$', '(?<!x)y', '(a)\\1', '^(?=a)(a+)+$']) {
      const validate = compileArgumentsSchema({ type: 'string', pattern });
      expect(validate.uncheckedPatterns, pattern).to.deep.equal([pattern]);
      // Never run on the backtracking engine: thirty a's and a '!' answer at once.
      expect(validate(`${'a'.repeat(30)}!`), pattern).to.deep.equal({ ok: true });
    }
    // zod's formats built on lookahead publish such patterns: the tool is callable, its worker checks them.
    const emoji = compileArgumentsSchema({
      type: 'object',
      properties: { e: { type: 'string', pattern: '^(\\p{Extended_Pictographic}|\\p{Emoji_Component})+$' } },
    });
    expect(emoji.uncheckedPatterns).to.deep.equal([]);
    expect(compileArgumentsSchema({ type: 'string', pattern: '^[a-z]+$' }).uncheckedPatterns).to.deep.equal([]);
  });

  it('refuses what is not a regular expression at all, with the reason', () => {
    for (const [pattern, reason] of [
      ['(a{1000}){1000}', /invalid repeat count/],
      ['[a', /missing closing ]|missing/],
    ] as const) {
      expect(() => compileArgumentsSchema({ type: 'string', pattern }), pattern).to.throw(SchemaError, reason);
    }
  });
});

describe('schema validation: each tool compiles alone', () => {
  it('two tools whose schemas carry the same $id both validate, each with its own', () => {
    const one = compileArgumentsSchema({ $id: 'same.json', type: 'object', properties: { a: { type: 'string' } } });
    const two = compileArgumentsSchema({ $id: 'same.json', type: 'object', properties: { a: { type: 'number' } } });
    expect(one({ a: 'x' })).to.deep.equal({ ok: true });
    expect(two({ a: 1 })).to.deep.equal({ ok: true });
    expect(two({ a: 'x' })).to.deep.equal({ ok: false, problems: 'a: must be number' });
  });

  it('refuses $ref loops, unresolvable and remote refs, and schemas that are not JSON Schema, saying why', () => {
    for (const [schema, reason] of [
      [{ $ref: '#' }, /a \$ref loop at \//],
      [{ $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, /\$ref loop/],
      [
        {
          $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { anyOf: [{ not: { $ref: '#/$defs/a' } }] } },
          $ref: '#/$defs/a',
        },
        /\$ref loop/,
      ],
      [{ $ref: '#/x', x: { $ref: '#/x' } }, /\$ref loop/],
      [{ $ref: '#/$defs/nope' }, /unresolvable \$ref at \/: "#\/\$defs\/nope"/],
      [{ $ref: 'http://127.0.0.1:1/schema.json' }, /unresolvable \$ref/],
      [{ type: 'foo' }, /not a valid JSON Schema: schema\/type/],
      [
        { properties: { a: { minimum: 'x' } } },
        /not a valid JSON Schema: schema\/properties\/a\/minimum must be number/,
      ],
      [{ $defs: { a: { $id: 'a.json' }, b: { $id: 'a.json', type: 'number' } } }, /does not compile/],
      [{ $id: 'urn:x' }, /does not compile/],
    ] as const) {
      expect(() => compileArgumentsSchema(schema), JSON.stringify(schema)).to.throw(SchemaError, reason);
    }
  });

  it('accepts recursion that descends into the arguments, $anchor refs and refs between $id resources', () => {
    const tree = compileArgumentsSchema({
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } },
    });
    expect(tree({ name: 'a', children: [{ name: 'b', children: [] }] })).to.deep.equal({ ok: true });
    expect(tree({ children: [{ name: 1 }] }).ok).to.equal(false);
    const anchored = compileArgumentsSchema({
      $id: 'root.json',
      $defs: { n: { $anchor: 'num', type: 'number' }, other: { $id: 'other.json', type: 'string' } },
      properties: { a: { $ref: '#num' }, b: { $ref: 'other.json' }, c: { $ref: 'root.json#/$defs/n' } },
    });
    expect(anchored({ a: 1, b: 'x', c: 2 })).to.deep.equal({ ok: true });
    const draft07 = compileArgumentsSchema({
      $schema: 'http://json-schema.org/draft-07/schema#',
      definitions: { n: { type: 'number' } },
      properties: { a: { $ref: '#/definitions/n' } },
    });
    expect(draft07({ a: 'x' })).to.deep.equal({ ok: false, problems: 'a: must be number' });
  });

  it('uniqueItems takes time linear in the array (ajv’s compares every pair: seconds for 30,000 objects)', () => {
    const validate = compileArgumentsSchema({ type: 'array', uniqueItems: true });
    const items = Array.from({ length: 30_000 }, (_, i) => ({ a: i, b: [i] }));
    let check: ReturnType<typeof validate> = { ok: true };
    const used = cpuMs(() => {
      check = validate(items);
    });
    expect(check).to.deep.equal({ ok: true });
    expect(used).to.be.below(1000);
    expect(validate([{ a: 1, b: 2 }, 3, { b: 2, a: 1 }])).to.deep.equal({
      ok: false,
      problems: 'must NOT have duplicate items (items ## 2 and 0 are identical)',
    });
  });
});

describe('catalog bounds: settings', () => {
  it('CATALOG_MAX_ENTRY_BYTES, CATALOG_MAX_DEPTH and CATALOG_MAX_TOOLS have documented defaults and ranges', () => {
    expect(catalogBoundsOf(parseEnv(CatalogEnvSchema, {}))).to.deep.equal({
      maxEntryBytes: 65_536,
      maxDepth: 64,
      maxTools: 1000,
      maxToolsPerPublisher: 500,
      maxSchemaPaths: 10_000,
      maxPatternSize: 20_000,
    });
    expect(
      catalogBoundsOf(
        parseEnv(CatalogEnvSchema, { CATALOG_MAX_ENTRY_BYTES: '1024', CATALOG_MAX_DEPTH: '8', CATALOG_MAX_TOOLS: '1' }),
      ),
    ).to.deep.include({ maxEntryBytes: 1024, maxDepth: 8, maxTools: 1 });
    expect(() => parseEnv(CatalogEnvSchema, { CATALOG_MAX_DEPTH: '1000' })).to.throw(
      ConfigError,
      /CATALOG_MAX_DEPTH="1000": .*256/,
    );
    expect(() => parseEnv(CatalogEnvSchema, { CATALOG_MAX_ENTRY_BYTES: 'big' })).to.throw(
      ConfigError,
      /CATALOG_MAX_ENTRY_BYTES="big"/,
    );
  });
});
