// Which era a POST belongs to (C26-COEX-2), decided by its body first, and the 2026-07-28 validation ladder of a
// modern request (C26-ERR-3): header/body mismatch, the `_meta` envelope, the version, the routing headers. The
// legacy path is left exactly as it was for everything this module calls legacy.
import { ErrorCode, MODERN_PROTOCOL_VERSIONS, ModernErrorCode, ModernMeta, type JsonRpcId } from '@mcp-tasks/protocol';

const LEGACY_HEADER_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);

export interface ModernRequest {
  id: JsonRpcId;
  method: string;
  params: Record<string, unknown>;
  protocolVersion: string;
  /** This request's declared client capabilities: the only ones that count for it (C26-META-3). */
  clientCapabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
}

/** A refused modern message: its HTTP status and JSON-RPC error (id echoed when there was one, C26-ERR-1). */
export interface ModernRefusal {
  status: number;
  id: JsonRpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export type Classification =
  | { era: 'legacy' }
  | { era: 'modern'; request: ModernRequest }
  /** A notification with a modern claim: accepted with 202 and ignored (C26-HDR-5). */
  | { era: 'modern-notification' }
  | { era: 'refused'; refusal: ModernRefusal };

type Headers = Record<string, string | string[] | undefined>;

/** The methods whose `Mcp-Name` header must name a param (C26-HDR-1, X-HTTP-1), and which param. */
const NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

export function classifyPost(body: unknown, headers: Headers): Classification {
  // Arrays (batches) and responses to our requests are legacy traffic (rows 3 and 4).
  if (!isObject(body)) return { era: 'legacy' };
  const headerVersion = headerOf(headers, 'mcp-protocol-version');
  const method = body['method'];
  const params = body['params'];
  const meta = isObject(params) ? params['_meta'] : undefined;
  const claimed = isObject(meta) && Object.hasOwn(meta, ModernMeta.ProtocolVersion);
  const id = isId(body['id']) ? body['id'] : null;
  if (method === 'initialize' && !validClaim(meta)) {
    if (headerVersion !== undefined && isModernHeader(headerVersion)) {
      return refused(
        400,
        id,
        ModernErrorCode.HeaderMismatch,
        'initialize is not part of MCP-Protocol-Version ' + headerVersion,
      );
    }
    return { era: 'legacy' };
  }
  if (!claimed) {
    if (headerVersion !== undefined && isModernHeader(headerVersion)) {
      return refused(
        400,
        id,
        ErrorCode.InvalidParams,
        `A ${headerVersion} request must carry params._meta["${ModernMeta.ProtocolVersion}"] and ` +
          `params._meta["${ModernMeta.ClientCapabilities}"]`,
      );
    }
    return { era: 'legacy' };
  }
  if (typeof method !== 'string' || body['jsonrpc'] !== '2.0') {
    return refused(400, id, ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message');
  }
  if (!('id' in body)) return { era: 'modern-notification' };
  if (id === null)
    return refused(400, null, ErrorCode.InvalidRequest, 'Invalid Request: id must be a string or number');
  const envelope = meta;
  const version = envelope[ModernMeta.ProtocolVersion];
  // Header and body disagree (C26-HDR-1), before the envelope itself is judged (C26-ERR-3 step 2).
  if (headerVersion !== undefined && typeof version === 'string' && headerVersion !== version) {
    return refused(
      400,
      id,
      ModernErrorCode.HeaderMismatch,
      `MCP-Protocol-Version header '${headerVersion}' does not match _meta protocolVersion '${version}'`,
    );
  }
  const methodHeader = headerOf(headers, 'mcp-method');
  if (methodHeader !== undefined && methodHeader !== method) {
    return refused(
      400,
      id,
      ModernErrorCode.HeaderMismatch,
      `Mcp-Method header '${methodHeader}' does not match method '${method}'`,
    );
  }
  const capabilities = envelope[ModernMeta.ClientCapabilities];
  if (typeof version !== 'string' || version === '') {
    return refused(400, id, ErrorCode.InvalidParams, `params._meta["${ModernMeta.ProtocolVersion}"] must be a string`);
  }
  if (!isObject(capabilities)) {
    return refused(
      400,
      id,
      ErrorCode.InvalidParams,
      `params._meta["${ModernMeta.ClientCapabilities}"] is required and must be an object`,
    );
  }
  if (!MODERN_PROTOCOL_VERSIONS.includes(version)) {
    return {
      era: 'refused',
      refusal: {
        status: 400,
        id,
        error: {
          code: ModernErrorCode.UnsupportedProtocolVersion,
          message: `Unsupported protocol version '${version}'`,
          data: { supported: [...MODERN_PROTOCOL_VERSIONS], requested: version },
        },
      },
    };
  }
  if (headerVersion === undefined) {
    return refused(400, id, ModernErrorCode.HeaderMismatch, 'The MCP-Protocol-Version header is required');
  }
  if (methodHeader === undefined)
    return refused(400, id, ModernErrorCode.HeaderMismatch, 'The Mcp-Method header is required');
  const nameParam = NAME_SOURCE[method];
  if (nameParam !== undefined) {
    const expected = isObject(params) ? params[nameParam] : undefined;
    const nameHeader = headerOf(headers, 'mcp-name');
    if (nameHeader === undefined) {
      return refused(400, id, ModernErrorCode.HeaderMismatch, `The Mcp-Name header is required for ${method}`);
    }
    if (typeof expected === 'string' && decodeHeaderValue(nameHeader) !== expected) {
      return refused(
        400,
        id,
        ModernErrorCode.HeaderMismatch,
        `Mcp-Name header does not match params.${nameParam} of ${method}`,
      );
    }
  }
  const clientInfo = envelope[ModernMeta.ClientInfo];
  return {
    era: 'modern',
    request: {
      id,
      method,
      params: params as Record<string, unknown>,
      protocolVersion: version,
      clientCapabilities: capabilities,
      clientInfo: isObject(clientInfo) ? clientInfo : {},
    },
  };
}

/** A `=?base64?…?=` value decoded (C26-HDR-2); anything else trimmed of surrounding whitespace. */
export function decodeHeaderValue(value: string): string {
  const trimmed = value.trim();
  const match = /^=\?base64\?(.*)\?=$/i.exec(trimmed);
  if (!match) return trimmed;
  return Buffer.from(match[1] ?? '', 'base64').toString('utf8');
}

function validClaim(meta: unknown): boolean {
  return (
    isObject(meta) &&
    typeof meta[ModernMeta.ProtocolVersion] === 'string' &&
    isObject(meta[ModernMeta.ClientCapabilities])
  );
}

/** A header naming a revision after the legacy ones: 2026-07-28, or any later date-shaped revision. */
function isModernHeader(version: string): boolean {
  if (LEGACY_HEADER_VERSIONS.has(version)) return false;
  return /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2026-07-28';
}

function headerOf(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value[0];
  return value;
}

function refused(status: number, id: JsonRpcId | null, code: number, message: string): Classification {
  return { era: 'refused', refusal: { status, id, error: { code, message } } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}
