// A handler's answer that the transport streams rather than sends at once.
import type { TaskRecord } from '@mcp-tasks/protocol';

/**
 * The answer goes on an SSE stream of the task's messages. `since` is the session-stream position the request
 * began at: the stream starts there, so a handler that waited a while before streaming loses none of the task's
 * messages meanwhile.
 */
export class StreamReply {
  constructor(
    readonly task: Pick<TaskRecord, 'taskId' | 'kind' | 'sessionId'>,
    readonly since?: string,
  ) {}
}
