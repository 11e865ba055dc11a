// Stops the tools of tasks that were cancelled (or deleted) while they run here: on the api's broadcast, and by a
// periodic check of their statuses in case a message was missed.
import { parseControlMessage, type Engine } from '@mcp-tasks/engine';
import { type CleanupStack, type Logger } from '@mcp-tasks/runtime';
import { isTerminal } from '@mcp-tasks/protocol';
import { AbortReason, type RunningTasks } from './running-tasks.ts';

export async function listenForCancels(
  engine: Pick<Engine, 'keys' | 'store' | 'subscriber'>,
  running: RunningTasks,
  checkEveryMs: number,
  log: Logger,
  cleanup: CleanupStack,
): Promise<void> {
  await engine.subscriber.listen(engine.keys.controlChannel(), (raw) => {
    const message = parseControlMessage(raw);
    if (message?.type === 'cancel' && running.abort(message.taskId, AbortReason.Cancelled)) {
      log.info('cancelling running task', { taskId: message.taskId });
    }
  });
  const check = setInterval(() => {
    const ids = running.ids();
    void engine.store.statuses(ids).then(
      (statuses) =>
        statuses.forEach((status, i) => {
          const id = ids[i];
          if (id && (status === undefined || isTerminal(status)))
            running.abort(id, status ? AbortReason.Cancelled : AbortReason.Gone);
        }),
      () => undefined,
    );
  }, checkEveryMs);
  cleanup.add('cancel-check', check, clearInterval);
}
