// MCPT_TOOLS: the modules a worker loads its tools from (docs/tools.md, "Loading tools"). Each entry is a
// module path relative to the working directory or a package name; the module exports `tools` or a default array.
// A file may be ESM or CommonJS (.js, .mjs, .cjs) whatever its package.json says, where Node can load it so.
import { createRequire, register } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '@mcp-tasks/engine';
import type { ToolDefinition } from '@mcp-tasks/protocol';

/** The tools of every module `spec` names, in order; undefined when `spec` names none. */
export async function loadTools(spec: string | undefined, cwd = process.cwd()): Promise<ToolDefinition[] | undefined> {
  const entries = (spec ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return undefined;
  const tools: ToolDefinition[] = [];
  for (const entry of entries) tools.push(...(await loadModule(entry, cwd)));
  return tools;
}

async function loadModule(entry: string, cwd: string): Promise<ToolDefinition[]> {
  const isPath = entry.startsWith('.') || isAbsolute(entry);
  const module = isPath ? await importFile(entry, resolve(cwd, entry)) : await importPackage(entry, cwd);
  const exported = exportedTools(module);
  if (!Array.isArray(exported) || exported.length === 0) {
    throw new ConfigError(
      `MCPT_TOOLS: '${entry}' exports no tools: export \`tools\` (an array of defineTool(...) values) or a default array`,
    );
  }
  exported.forEach((tool: unknown, index) => {
    if (!isToolDefinition(tool)) {
      throw new ConfigError(
        `MCPT_TOOLS: '${entry}' exports a tools[${index}] that is not a tool: make it with defineTool, ` +
          'defineExternalTool or defineQueueTool (name, description, inputSchema as a zod schema, run)',
      );
    }
  });
  return exported as ToolDefinition[];
}

/**
 * `tools` or a default array; a CommonJS module's `module.exports = { tools }` (or `exports.tools = ...`) is its
 * default export when Node cannot tell its names.
 */
function exportedTools(module: Record<string, unknown>): unknown {
  if (Array.isArray(module['tools'])) return module['tools'];
  const fallback = module['default'];
  if (fallback !== null && typeof fallback === 'object' && Array.isArray((fallback as { tools?: unknown }).tools)) {
    return (fallback as { tools: unknown }).tools;
  }
  return fallback;
}

async function importPackage(entry: string, cwd: string): Promise<Record<string, unknown>> {
  try {
    return (await import(resolvePackage(entry, cwd))) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`MCPT_TOOLS: could not load '${entry}': ${(error as Error).message}`);
  }
}

/**
 * A tools file, ESM or CommonJS. A `.js` file written as ESM (`import`, `export`) in a CommonJS project (what
 * `npm init -y` makes) is loaded as ESM all the same; a file that still cannot load is reported with the fix.
 */
async function importFile(entry: string, path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    if (!isEsmInCommonJs(error)) throw loadError(entry, path, error);
    try {
      return (await import(asModule(url))) as Record<string, unknown>;
    } catch (again) {
      throw loadError(entry, path, again);
    }
  }
}

function isEsmInCommonJs(error: unknown): boolean {
  return (
    error instanceof SyntaxError &&
    /Cannot use import statement outside a module|Unexpected token 'export'|import\.meta.*outside a module/.test(
      error.message,
    )
  );
}

/** The module syntax of the other kind than the file's package says: the sentence that says what to change. */
function loadError(entry: string, path: string, error: unknown): ConfigError {
  const message = error instanceof Error ? error.message : String(error);
  const where = `MCPT_TOOLS: could not load '${entry}' (${path}): ${message.replace(/\.?\s*$/, '')}`;
  if (isEsmInCommonJs(error)) {
    return new ConfigError(
      `${where}. A .js file is written as an ES module (import/export) but its package.json makes .js files ` +
        'CommonJS: rename it to .mjs, or add "type": "module" to the package.json next to it (npm init -y ' +
        'writes "type": "commonjs").',
    );
  }
  if (/is a CommonJS module|does not provide an export named/.test(message)) {
    return new ConfigError(
      `${where}. If the module it imports is a .js file written as an ES module (import/export), its ` +
        'package.json makes it CommonJS: rename it to .mjs, or add "type": "module" to the package.json next to ' +
        'it (npm init -y writes "type": "commonjs").',
    );
  }
  if (/(require|module|exports|__dirname|__filename) is not defined in ES module scope/.test(message)) {
    return new ConfigError(
      `${where}. The file is written as CommonJS (require, module.exports) but its package.json has ` +
        '"type": "module": rename it to .cjs, or write it with import/export.',
    );
  }
  return new ConfigError(where);
}

/** Node's loader hook that reads one URL (marked `mcpt-format=module`) as an ES module whatever its package says. */
const AS_MODULE_HOOK = `data:text/javascript,${encodeURIComponent(`
export async function load(url, context, nextLoad) {
  if (!/[?&]mcpt-format=module(&|$)/.test(url)) return nextLoad(url, context);
  return { ...(await nextLoad(url, { ...context, format: 'module' })), format: 'module' };
}`)}`;
let hookRegistered = false;

function asModule(url: string): string {
  if (!hookRegistered) {
    register(AS_MODULE_HOOK);
    hookRegistered = true;
  }
  return `${url}?mcpt-format=module`;
}

/** A package as the working directory's project sees it; a package it cannot find is looked up from here. */
function resolvePackage(name: string, cwd: string): string {
  try {
    return pathToFileURL(createRequire(join(cwd, 'package.json')).resolve(name)).href;
  } catch {
    return name;
  }
}

function isToolDefinition(value: unknown): value is ToolDefinition {
  if (value === null || typeof value !== 'object') return false;
  const tool = value as Partial<ToolDefinition>;
  return (
    typeof tool.name === 'string' &&
    typeof tool.description === 'string' &&
    typeof (tool.inputSchema as { safeParse?: unknown } | undefined)?.safeParse === 'function' &&
    typeof tool.run === 'function'
  );
}
