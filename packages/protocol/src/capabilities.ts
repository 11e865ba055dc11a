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
  const capabilities: Record<string, unknown> = { tools: { listChanged: true } };
  if (supportsTasks(protocolVersion)) {
    capabilities['tasks'] = {
      ...(options.listTasks ? { list: {} } : {}),
      cancel: {},
      requests: { tools: { call: {} } },
    };
  }
  return capabilities;
}

/** A capability tree: the keys kept at each level; `{}` keeps the key and nothing below it. */
interface CapabilityShape {
  readonly [key: string]: CapabilityShape;
}

/**
 * The client capabilities the runner acts on: the requests it may send (elicitation and its modes, sampling and
 * its features), whether the client runs them as tasks of its own, and whether it accepts tasks/cancel for those.
 * A session keeps this projection and nothing else the client declared (apps/worker/src/tool-context.ts reads it).
 */
const USED_CLIENT_CAPABILITIES: CapabilityShape = {
  elicitation: { form: {}, url: {} },
  sampling: { context: {}, tools: {} },
  roots: { listChanged: {} },
  tasks: { cancel: {}, requests: { elicitation: { create: {} }, sampling: { createMessage: {} } } },
};

/**
 * What a session stores of the client's capabilities: the used keys it declared, each as `{}` with its used keys
 * below, so the stored size is fixed however large the declaration (an `initialize` body may be megabytes).
 */
export function usedClientCapabilities(declared: Record<string, unknown>): Record<string, unknown> {
  return project(declared, USED_CLIENT_CAPABILITIES);
}

function project(declared: unknown, shape: CapabilityShape): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared)) return kept;
  for (const [key, below] of Object.entries(shape)) {
    // A capability is declared by its presence (MCP writes `{}`); an odd value still declares it, with nothing below.
    if (Object.hasOwn(declared, key) && (declared as Record<string, unknown>)[key] !== undefined) {
      kept[key] = project((declared as Record<string, unknown>)[key], below);
    }
  }
  return kept;
}

/** The longest `clientInfo` string a session keeps; longer ones are cut. */
export const CLIENT_INFO_MAX_CHARS = 128;

/** What a session stores of `clientInfo`: name, version and title, each at most CLIENT_INFO_MAX_CHARS long. */
export function boundedClientInfo(info: { name: string; version: string; title?: unknown }): Record<string, string> {
  const cut = (text: string) => text.slice(0, CLIENT_INFO_MAX_CHARS);
  return {
    name: cut(info.name),
    version: cut(info.version),
    ...(typeof info.title === 'string' ? { title: cut(info.title) } : {}),
  };
}
