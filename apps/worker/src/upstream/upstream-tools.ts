// The tools of a worker's upstream MCP servers, as tools of our own: each listed upstream tool (allowed, renamed with
// the upstream's prefix) becomes a definition the worker runs and a catalog entry with the upstream's own schemas.
// The set follows the upstreams: their notifications/tools/list_changed, and their restarts.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@mcp-tasks/engine';
import {
  TaskSupport,
  toolQueueName,
  type CatalogEntry,
  type ToolContext,
  type ToolDefinition,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { callUpstreamTool } from './call.ts';
import { isToolAllowed, type UpstreamConfig } from './config.ts';
import { UpstreamPool } from './pool.ts';

/** A tool whose catalog entry is given, not derived from a zod schema (its schemas come from elsewhere). */
export interface PublishedTool {
  definition: ToolDefinition;
  entry: CatalogEntry;
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** The api validates arguments against the upstream's JSON Schema, and the upstream validates them again. */
const UpstreamArguments = z.record(z.string(), z.unknown());

export class UpstreamTools {
  readonly #pools: UpstreamPool[];
  readonly #listed = new Map<string, PublishedTool[]>();
  readonly #refreshing = new Map<UpstreamPool, Promise<void>>();
  readonly #again = new Set<UpstreamPool>();
  readonly #listeners = new Set<() => void>();

  private constructor(
    upstreams: readonly UpstreamConfig[],
    private readonly log: Logger,
  ) {
    this.#pools = upstreams.map((upstream) => new UpstreamPool(upstream, log, (pool) => void this.#refresh(pool)));
  }

  /** Connects to every upstream and lists its tools; an upstream that is down is retried in the background. */
  static async start(upstreams: readonly UpstreamConfig[], log: Logger): Promise<UpstreamTools> {
    const tools = new UpstreamTools(upstreams, log);
    await Promise.all(tools.#pools.map((pool) => pool.start()));
    await Promise.all(tools.#pools.map((pool) => tools.#refreshing.get(pool) ?? Promise.resolve()));
    return tools;
  }

  /** The tools of every upstream now, in upstream order; a name an earlier upstream has is left out. */
  current(): PublishedTool[] {
    const byName = new Map<string, PublishedTool>();
    for (const pool of this.#pools) {
      for (const tool of this.#listed.get(pool.upstream.name) ?? []) {
        if (byName.has(tool.entry.name)) {
          this.log.warn('upstream tool left out: an earlier upstream has a tool of that name', {
            upstream: pool.upstream.name,
            tool: tool.entry.name,
          });
          continue;
        }
        byName.set(tool.entry.name, tool);
      }
    }
    return [...byName.values()];
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await Promise.all(this.#pools.map((pool) => pool.close()));
  }

  /** Lists the upstream's tools again; calls meanwhile are served by one more listing after this one. */
  #refresh(pool: UpstreamPool): Promise<void> {
    const running = this.#refreshing.get(pool);
    if (running) {
      this.#again.add(pool);
      return running;
    }
    const listing = this.#list(pool).finally(() => {
      this.#refreshing.delete(pool);
      if (this.#again.delete(pool)) void this.#refresh(pool);
    });
    this.#refreshing.set(pool, listing);
    return listing;
  }

  async #list(pool: UpstreamPool): Promise<void> {
    const { upstream } = pool;
    const session = pool.primary;
    if (!session) return;
    let listed: Tool[];
    try {
      listed = await session.listTools();
    } catch (error) {
      // The previous listing stays: the tools are still served, and the next list_changed or restart lists again.
      this.log.warn('upstream tools not listed', { upstream: upstream.name, error: (error as Error).message });
      return;
    }
    const tools = listed.flatMap((tool) => this.#publishable(pool, tool));
    this.#listed.set(upstream.name, tools);
    this.log.info('upstream tools listed', { upstream: upstream.name, tools: tools.map((tool) => tool.entry.name) });
    for (const listener of this.#listeners) listener();
  }

  #publishable(pool: UpstreamPool, tool: Tool): PublishedTool[] {
    const { upstream } = pool;
    if (!isToolAllowed(upstream, tool.name)) return [];
    const name = `${upstream.prefix}${tool.name}`;
    if (!TOOL_NAME.test(name)) {
      this.log.warn('upstream tool left out: its name is not a valid tool name here', {
        upstream: upstream.name,
        tool: name,
      });
      return [];
    }
    const upstreamSupport = tool.execution?.taskSupport ?? TaskSupport.Forbidden;
    // An upstream that runs the tool as a task of its own (it declares tasks for tools/call) is called task-augmented.
    const asTask = upstreamSupport !== TaskSupport.Forbidden && pool.runsToolTasks();
    if (upstreamSupport === TaskSupport.Required && !asTask) {
      this.log.warn('upstream tool left out: it must be called as a task, but its server does not declare tasks', {
        upstream: upstream.name,
        tool: tool.name,
      });
      return [];
    }
    const taskSupport = upstream.taskSupport[tool.name] ?? TaskSupport.Optional;
    const description = tool.description ?? tool.title ?? tool.name;
    const definition: ToolDefinition = {
      name,
      ...(tool.title !== undefined ? { title: tool.title } : {}),
      description,
      inputSchema: UpstreamArguments,
      taskSupport,
      retrySafe: upstream.retrySafe,
      run: (args: Record<string, unknown>, context: ToolContext) =>
        callUpstreamTool(pool, tool.name, args, context, asTask),
    };
    const entry: CatalogEntry = {
      name,
      ...(tool.title !== undefined ? { title: tool.title } : {}),
      description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
      ...(tool.annotations !== undefined ? { annotations: { ...tool.annotations } } : {}),
      taskSupport,
      retrySafe: upstream.retrySafe,
      queue: toolQueueName(name),
      external: false,
    };
    return [{ definition, entry }];
  }
}
