#!/usr/bin/env node
// `pnpm lint` runs this: the source modules' imports must form no cycle — type-only imports included, which
// eslint's import-x/no-cycle skips — and must point down the layers docs/architecture.md draws: packages never
// import apps, apps never import each other (but the installable package, which bundles them), and inside the api
// the use cases (calls/) never import the wires or the transport, and a wire (wires/rev<date>/) never imports another;
// and the Redis client library is the engine's alone. Prints each cycle, each upward import and each library
// imported outside its owner, with the files that make it, and exits 1.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// `--root DIR` checks another tree laid out the same way (the tests' fixtures).
const rootArgument = process.argv.indexOf('--root');
const root =
  rootArgument > 0
    ? resolve(process.argv[rootArgument + 1] ?? '.')
    : join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Who may import whom, by the first matching pattern of each side (paths relative to the root, '/'-separated). A
 * module may always import within its own layer (the same folder prefix).
 */
const LAYERS = [
  // The vocabulary: nothing of ours.
  { layer: 'packages/protocol/', may: [] },
  { layer: 'packages/engine/', may: ['packages/protocol/'] },
  { layer: 'packages/tools/', may: ['packages/protocol/'] },
  { layer: 'packages/client/', may: ['packages/protocol/'] },
  // Use cases below the wires: they never learn which revision asked.
  { layer: 'apps/api/src/calls/', may: ['packages/', 'apps/api/src/context.ts', 'apps/api/src/tool-catalog.ts'] },
  // The wires, one folder per MCP revision, picked by the table in wires/index.ts: a wire never imports another wire
  // (nor the table above them); what two wires share lives beside them (wires/*.ts, transport/, the api's root).
  {
    layer: 'apps/api/src/wires/*/',
    may: ['packages/', 'apps/api/src/'],
    not: ['apps/api/src/wires/rev', 'apps/api/src/wires/index.ts'],
    why: 'a wire never imports another wire',
  },
  // The services every use case reads (calls/ may import it): they name no wire, so calls/ learns none through them.
  {
    layer: 'apps/api/src/context.ts',
    may: ['packages/', 'apps/api/src/'],
    not: ['apps/api/src/wires/', 'apps/api/src/transport/'],
    why: 'the use cases read it, and they never learn which revision asked',
  },
  { layer: 'apps/api/', may: ['packages/'] },
  { layer: 'apps/worker/', may: ['packages/'] },
  { layer: 'apps/cli/', may: ['packages/'] },
  // The installable package bundles the apps.
  { layer: 'apps/runner/', may: ['packages/', 'apps/'] },
];

/**
 * Libraries only one layer may import (type-only imports included). The engine owns Redis: every command the runner
 * sends is the engine's, so the Redis client is too. The apps still hold connections (made by the engine's
 * createRedis, passed to createEngine, pinged by the api's readiness probe) and name them by the engine's
 * RedisClient type.
 */
const OWNED = [{ library: 'ioredis', owner: 'packages/engine/', why: "use the engine's RedisClient and createRedis" }];

function sourceFiles() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
    }
  };
  for (const group of ['apps', 'packages']) {
    if (!existsSync(join(root, group))) continue;
    for (const entry of readdirSync(join(root, group), { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const src = join(root, group, entry.name, 'src');
      try {
        walk(src);
      } catch (error) {
        if (error.code !== 'ENOENT') throw error;
      }
    }
  }
  return files;
}

const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config ?? {
  compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler', allowImportingTsExtensions: true },
};
const options = ts.parseJsonConfigFileContent(config, ts.sys, root).options;

/** What a file imports, as written (value, type-only, re-exports and import() alike). */
function specifiersOf(file) {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map(({ fileName }) => fileName);
}

/** The modules of ours a file imports. */
function importsOf(file, ours) {
  const found = new Set();
  for (const fileName of specifiersOf(file)) {
    const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule?.resolvedFileName;
    if (resolved && ours.has(resolved)) found.add(resolved);
  }
  return found;
}

const name = (file) => relative(root, file).split(sep).join('/');

/**
 * The rule of a module's layer, its `layer` made concrete: a `*` stands for one folder, so that each of the folders
 * it matches is a layer of its own (each wire).
 */
function layerOf(path) {
  for (const entry of LAYERS) {
    const [before, after] = entry.layer.split('*');
    if (after === undefined) {
      if (path.startsWith(entry.layer)) return entry;
      continue;
    }
    if (!path.startsWith(before)) continue;
    const folder = path.slice(before.length).split('/')[0];
    const concrete = `${before}${folder}${after}`;
    if (folder && path.startsWith(concrete)) return { ...entry, layer: concrete };
  }
  return undefined;
}

/** Why `from` may not import `to`, or undefined when it may. */
function upward(from, to) {
  const rule = layerOf(from);
  if (!rule || to.startsWith(rule.layer)) return undefined;
  if (rule.not?.some((prefix) => to.startsWith(prefix)))
    return `${rule.layer} must not import ${to}${rule.why ? `: ${rule.why}` : ''}`;
  if (rule.may.some((prefix) => to.startsWith(prefix))) return undefined;
  return `${rule.layer} may import only ${rule.may.length ? rule.may.join(', ') : 'itself'}`;
}

/** Strongly connected components of more than one module, or a module importing itself (Tarjan). */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const found = [];
  const visit = (node) => {
    state.set(node, { index, low: index, onStack: true });
    index += 1;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!state.has(next)) {
        visit(next);
        state.get(node).low = Math.min(state.get(node).low, state.get(next).low);
      } else if (state.get(next).onStack) {
        state.get(node).low = Math.min(state.get(node).low, state.get(next).index);
      }
    }
    if (state.get(node).low === state.get(node).index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

const files = sourceFiles();
const ours = new Set(files);
const graph = new Map(files.map((file) => [file, importsOf(file, ours)]));
const problems = [];
for (const component of cycles(graph)) {
  const members = new Set(component);
  const edges = component.flatMap((file) =>
    [...(graph.get(file) ?? [])].filter((to) => members.has(to)).map((to) => `    ${name(file)} -> ${name(to)}`),
  );
  problems.push(`import cycle of ${component.length} modules:\n${edges.join('\n')}`);
}
for (const [file, imports] of graph) {
  if (!layerOf(name(file)))
    problems.push(`${name(file)} is in no layer: add its folder to LAYERS in scripts/check-imports.mjs`);
  for (const to of imports) {
    const why = upward(name(file), name(to));
    if (why) problems.push(`upward import: ${name(file)} -> ${name(to)} (${why})`);
  }
  for (const specifier of specifiersOf(file)) {
    const owned = OWNED.find(({ library }) => specifier === library || specifier.startsWith(`${library}/`));
    if (owned && !name(file).startsWith(owned.owner)) {
      problems.push(`${name(file)} imports ${specifier}: only ${owned.owner} may (${owned.why})`);
    }
  }
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`\ncheck-imports: ${problems.length} problem(s) in ${files.length} modules (docs/architecture.md)`);
  process.exit(1);
}
console.log(`check-imports: ${files.length} modules, no cycle, every import points down`);
