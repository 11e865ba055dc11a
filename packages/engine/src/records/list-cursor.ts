// Owner-index members and the opaque tasks/list cursors made from them (T-LIST-1, T-LIST-2).
import { InvalidInputError } from '@mcp-tasks/protocol';

const MEMBER = /^\d{13}:[A-Za-z0-9-]{1,128}$/;
const CURSOR_PREFIX = 'c1.';

/** Index member: zero-padded creation time then id, so lexical order is creation order (ties broken by id). */
export function indexMember(createdAt: number, taskId: string): string {
  return `${String(createdAt).padStart(13, '0')}:${taskId}`;
}

/** The task id of an index member. */
export function taskIdOf(member: string): string {
  return member.slice(member.indexOf(':') + 1);
}

export function encodeCursor(member: string): string {
  return CURSOR_PREFIX + Buffer.from(member, 'utf8').toString('base64url');
}

/** The member a cursor points after, or -32602 when the cursor is not one we made. */
export function decodeCursor(cursor: string): string {
  if (cursor.startsWith(CURSOR_PREFIX)) {
    const member = Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8');
    if (MEMBER.test(member) && encodeCursor(member) === cursor) return member;
  }
  throw new InvalidInputError('Invalid cursor: pass back a nextCursor from tasks/list unchanged');
}
