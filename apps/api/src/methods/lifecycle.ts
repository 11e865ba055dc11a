// initialize and ping.
import { randomUUID } from 'node:crypto';
import type { Session } from '@mcp-tasks/engine';
import { InitializeParamsSchema, negotiateProtocolVersion, parseParams, serverCapabilities } from '@mcp-tasks/protocol';
import { principalOwner } from '../auth.ts';
import type { ApiServices, MethodHandler } from '../context.ts';

export const SERVER_INFO = { name: 'mcp-task-runner', version: '0.1.0' };

/** Creates the session in Redis and answers the negotiated version and our capabilities. */
export async function initialize(
  params: Record<string, unknown> | undefined,
  services: ApiServices,
  /** The authenticated principal; without authentication the session is its own owner. */
  principal: string | undefined,
): Promise<{ session: Session; result: Record<string, unknown> }> {
  const parsed = parseParams(InitializeParamsSchema, params, 'initialize');
  const protocolVersion = negotiateProtocolVersion(parsed.protocolVersion);
  const sessionId = randomUUID();
  const session: Session = {
    sessionId,
    protocolVersion,
    clientCapabilities: parsed.capabilities,
    clientInfo: parsed.clientInfo,
    createdAt: Date.now(),
    // The binding of its tasks (DESIGN invariant 5): the token's principal, else the session itself.
    owner: principal !== undefined ? principalOwner(principal) : `session:${sessionId}`,
  };
  await services.sessions.create(session);
  return {
    session,
    result: {
      protocolVersion,
      capabilities: serverCapabilities(protocolVersion, { listTasks: services.config.TASKS_LIST_ENABLED }),
      serverInfo: SERVER_INFO,
      instructions:
        'Long-running tools run as MCP tasks on background workers. Call them with params.task, then poll ' +
        'tasks/get and fetch tasks/result.',
    },
  };
}

export const ping: MethodHandler = () => Promise.resolve({});
