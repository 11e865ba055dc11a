// MCPT_TOOLS: the modules a worker loads its tools from (README.md, "Use it with your own tools"). Each entry is a
// module path relative to the working directory or a package name; the module exports `tools` or a default array.
import { createRequire } from 'node:module';
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
  let module: Record<string, unknown>;
  try {
    module = (await import(isPath ? pathToFileURL(resolve(cwd, entry)).href : resolvePackage(entry, cwd))) as Record<
      string,
      unknown
    >;
  } catch (error) {
    throw new ConfigError(
      `MCPT_TOOLS: could not load '${entry}'${isPath ? ` (${resolve(cwd, entry)})` : ''}: ${(error as Error).message}`,
    );
  }
  const exported = Array.isArray(module['tools']) ? module['tools'] : module['default'];
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
