// The Redis key layout: every key of the runner is built here and nowhere else. All keys start with the prefix,
// so a prefix with a hash tag (e.g. "{mcpt}") keeps everything in one Redis Cluster slot.

export class KeySpace {
  constructor(readonly prefix: string) {
    if (prefix.includes(':') && !prefix.startsWith('{')) {
      throw new Error(`Key prefix '${prefix}' must not contain ':' (BullMQ uses it as a separator)`);
    }
  }

  /** Hash: the task record. */
  task(taskId: string): string {
    return `${this.prefix}:task:${taskId}`;
  }

  /** Sorted set (all scores 0, members ordered by creation): the tasks of one owner, for tasks/list. */
  ownerIndex(owner: string): string {
    return `${this.prefix}:owner:${owner}`;
  }

  /** Sorted set scored by expiry time: what the janitor deletes and when. */
  expiries(): string {
    return `${this.prefix}:expiries`;
  }

  /** Sorted set of non-terminal tasks scored by lastUpdatedAt: what the reconciler checks against BullMQ. */
  live(): string {
    return `${this.prefix}:live`;
  }

  /** Hash: an MCP session. */
  session(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}`;
  }

  /** Pub/sub channel: every status change of one task. */
  taskChannel(taskId: string): string {
    return `${this.prefix}:task-events:${taskId}`;
  }

  /** Pub/sub channel: commands to every worker (cancel). */
  controlChannel(): string {
    return `${this.prefix}:control`;
  }
}
