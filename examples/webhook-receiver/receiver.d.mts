// Types of receiver.mjs, for TypeScript receivers and the tests that run it.
import type { IncomingMessage, ServerResponse } from 'node:http';

export function webhookHandler(
  secret: string,
  onTask: (task: Record<string, unknown>, webhookId: string) => void,
  seen?: Set<string>,
): (req: IncomingMessage, res: ServerResponse) => void;
