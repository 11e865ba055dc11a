// What we declare at initialize, by negotiated protocol revision (T-CAP-1..4, T-TOOL-5).
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from './schemas.ts';

export interface CapabilityOptions {
  /** Off where requestors cannot be told apart (T-SEC-2). */
  listTasks: boolean;
}

export function negotiateProtocolVersion(requested: string): string {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/** Tasks arrived in 2025-11-25: a session on an older revision gets no `tasks` capability and plain calls only. */
export function supportsTasks(protocolVersion: string): boolean {
  return protocolVersion >= '2025-11-25';
}

export function serverCapabilities(protocolVersion: string, options: CapabilityOptions): Record<string, unknown> {
  const capabilities: Record<string, unknown> = { tools: { listChanged: false } };
  if (supportsTasks(protocolVersion)) {
    capabilities['tasks'] = {
      ...(options.listTasks ? { list: {} } : {}),
      cancel: {},
      requests: { tools: { call: {} } },
    };
  }
  return capabilities;
}
