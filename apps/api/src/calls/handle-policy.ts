// Who gets task handles and when a plain call is handed out (docs/clients.md), for both wires; the handle tools' names.
// Kept apart from the handle tools themselves (handles.ts), which the services this policy is part of run.
import { HandleToolNames, supportsTasks, TaskSupport, type CatalogEntry, type HandleTool } from '@mcp-tasks/protocol';

export interface HandleSettings {
  /** TASK_HANDLES. */
  enabled: boolean;
  /** HANDLE_AFTER_MS: a call still running this long after its request began is handed out. */
  afterMs: number;
  /** TASK_HANDLE_TOOL_PREFIX. */
  prefix: string;
}

/** Who gets task handles and when a call is handed out; the handle tools' names. */
export class TaskHandles {
  readonly names: HandleToolNames;

  constructor(readonly settings: HandleSettings) {
    this.names = new HandleToolNames(settings.prefix);
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /**
   * Whether a 2025-11-25 session gets handles: its client did not declare `capabilities.tasks` at initialize (T-CAP-1),
   * or its revision has no Tasks at all. A session that negotiated Tasks sees none of it.
   */
  offeredToSession(session: { protocolVersion: string; clientCapabilities: Record<string, unknown> }): boolean {
    if (!this.enabled) return false;
    return !supportsTasks(session.protocolVersion) || !('tasks' in session.clientCapabilities);
  }

  /**
   * When a plain call of `tool` whose request began at `since` (epoch ms) is handed out, or undefined when it never
   * is: handles are not offered to its client, or its tool forbids tasks (it runs to its end on the open request).
   */
  deadline(offered: boolean, tool: Pick<CatalogEntry, 'taskSupport'> | undefined, since: number): number | undefined {
    if (!offered || tool === undefined || tool.taskSupport === TaskSupport.Forbidden) return undefined;
    return since + this.settings.afterMs;
  }

  /** Which handle tool a tools/call names, when the caller is offered them. */
  toolOf(offered: boolean, name: string): HandleTool | undefined {
    return offered ? this.names.toolOf(name) : undefined;
  }
}
