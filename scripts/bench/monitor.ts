// A MONITOR connection on a plain socket. ioredis's monitor mode flips to "monitoring" a turn after MONITOR's +OK:
// a monitored command arriving in the same read as that +OK is taken for the answer to a command never sent, and
// ioredis throws (its "Command queue state error"), which a busy Redis makes likely. Here every line after +OK is
// a monitored command, whatever read it came in.
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';

/** One monitored command: MONITOR's timestamp (seconds, as printed), the client ("lua" inside a script), its name. */
export type MonitorListener = (time: string, source: string, command: string) => void;

export interface MonitorConnection {
  close(): void;
}

/** Connects, sends MONITOR (after AUTH when there is a password) and resolves once Redis has answered +OK. */
export async function monitorRedis(
  where: { host: string; port: number; username?: string; password?: string },
  listener: MonitorListener,
): Promise<MonitorConnection> {
  const socket: Socket = connect(where.port, where.host);
  socket.setEncoding('utf8');
  await once(socket, 'connect');
  const okays = where.password ? 2 : 1;
  let answered = 0;
  let buffer = '';
  let confirm!: () => void;
  let refuse!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    confirm = resolve;
    refuse = reject;
  });
  socket.on('error', (error) => refuse(error));
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\r\n')) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (answered < okays) {
        if (line.startsWith('-')) refuse(new Error(`MONITOR refused: ${line.slice(1)}`));
        else if (++answered === okays) confirm();
        continue;
      }
      monitored(line, listener);
    }
  });
  if (where.password) {
    const auth = where.username ? ['AUTH', where.username, where.password] : ['AUTH', where.password];
    socket.write(encodeCommand(auth));
  }
  socket.write(encodeCommand(['MONITOR']));
  await ready;
  return { close: () => socket.destroy() };
}

/** `+1700000000.123456 [0 127.0.0.1:5000] "HMGET" "key" ...`, or `[0 lua]` inside a script. */
function monitored(line: string, listener: MonitorListener): void {
  if (!line.startsWith('+')) return;
  const space = line.indexOf(' ');
  const open = line.indexOf('[', space);
  const close = line.indexOf(']', open);
  const quote = line.indexOf('"', close);
  if (space < 0 || open < 0 || close < 0 || quote < 0) return;
  const source = line.slice(open + 1, close).split(' ')[1] ?? '';
  const command = line.slice(quote + 1, line.indexOf('"', quote + 1));
  listener(line.slice(1, space), source, command);
}

function encodeCommand(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}
