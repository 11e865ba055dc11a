// What a tool returned, checked against CallToolResultSchema. The usual result, `{ content: [{ type: 'text', text }]
// }` and the like, is checked by hand: zod's parse of it (a copy of every object) cost about as much CPU as the rest
// of the worker's own per-task code. Anything else goes through zod, so the verdict and its message are zod's.
import { CallToolResultSchema, type CallToolResult } from '@mcp-tasks/protocol';

export type ToolResultCheck = ReturnType<typeof CallToolResultSchema.safeParse>;

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * Whether zod would accept `value` as it is, for the shapes this fast path knows: a plain object whose `content` is
 * an array of plain objects, each with a string `type`, with `isError` absent or boolean, and neither
 * `structuredContent` nor `_meta` (those go through zod). Other keys are allowed, as CallToolResultSchema allows them.
 */
function isPlainTextResult(value: unknown): value is CallToolResult {
  if (!isPlainObject(value)) return false;
  const { content, isError } = value;
  if (value['structuredContent'] !== undefined || value['_meta'] !== undefined) return false;
  if (isError !== undefined && typeof isError !== 'boolean') return false;
  if (!Array.isArray(content) || Object.getPrototypeOf(content) !== Array.prototype) return false;
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i];
    if (!isPlainObject(block) || typeof block['type'] !== 'string') return false;
  }
  return true;
}

/** CallToolResultSchema.safeParse, without its cost for the usual result (which is then answered as it is). */
export function checkToolResult(value: unknown): ToolResultCheck {
  if (isPlainTextResult(value)) return { success: true, data: value };
  return CallToolResultSchema.safeParse(value);
}
