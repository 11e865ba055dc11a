// A receiver of mcp-task-runner's webhooks (docs/webhooks.md): it checks each delivery's Standard Webhooks signature
// with the `standardwebhooks` package (npm install standardwebhooks), takes each webhook-id once (the runner sends a
// delivery at least once: a retry after a lost answer, or after a worker died, carries the same id), and answers 2xx
// quickly. Run it with `WEBHOOK_SECRET=whsec_... PORT=8080 node receiver.mjs`; test/integration/webhooks-processes
// .test.ts runs it behind a receiver outage and a worker's kill -9.
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';

/**
 * A node:http handler that calls `onTask(task, webhookId)` once per delivery. The body is the task as the 2026-07-28
 * tasks/get renders it: taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, and once completed its
 * `result` (a failed one: its `error`). `seen` remembers the ids taken: keep it where a restart finds it (a database
 * table with a unique key) in a real receiver.
 */
export function webhookHandler(secret, onTask, seen = new Set()) {
  const webhook = new Webhook(secret);
  return (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let task;
      try {
        // Throws unless the signature matches and webhook-timestamp is within 5 minutes of now.
        task = webhook.verify(Buffer.concat(chunks).toString('utf8'), req.headers);
      } catch {
        res.writeHead(401).end();
        return;
      }
      const id = req.headers['webhook-id'];
      if (!seen.has(id)) {
        seen.add(id);
        onTask(task, id);
      }
      res.writeHead(204).end();
    });
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const handler = webhookHandler(process.env.WEBHOOK_SECRET ?? '', (task) => {
    console.log(`${task.taskId} ${task.status}${task.statusMessage ? `: ${task.statusMessage}` : ''}`);
  });
  createServer(handler).listen(Number(process.env.PORT ?? 8080), '127.0.0.1');
}
