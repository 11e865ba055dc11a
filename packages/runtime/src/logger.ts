// Structured logs: JSON where a machine reads them, colourful lines in a terminal.
import winston from 'winston';
import { redactSessionFields } from './redact.ts';

export type Logger = winston.Logger;
export type LogFormat = 'json' | 'pretty' | 'auto';

export interface LoggerOptions {
  service: string;
  level: string;
  format?: LogFormat;
  /**
   * Whether `sessionId` fields are logged as digests (redact.ts): the default, for processes where the session id
   * may be the only credential (no authentication). Owners `session:<id>` are always logged as digests.
   */
  hashSessionIds?: boolean;
}

export function createLogger(options: LoggerOptions): Logger {
  const format = options.format ?? 'auto';
  // Every line, audit records and child loggers' fields included, passes here before it is formatted.
  const redact = winston.format((info) => redactSessionFields(info, options.hashSessionIds ?? true))();
  const pretty =
    format === 'pretty' || (format === 'auto' && process.stdout.isTTY && process.env['NODE_ENV'] !== 'production');
  const logger = winston.createLogger({
    level: options.level,
    defaultMeta: { service: options.service },
    format: pretty
      ? winston.format.combine(
          redact,
          winston.format.colorize(),
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.printf(({ level, message, timestamp, service, ...fields }) => {
            const rest = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
            return `${String(timestamp)} ${String(service)} ${level} ${String(message)}${rest}`;
          }),
        )
      : winston.format.combine(
          redact,
          winston.format.timestamp(),
          winston.format.errors({ stack: true }),
          winston.format.json(),
        ),
    transports: [new winston.transports.Console()],
  });
  writeDirectly(logger);
  return logger;
}

/**
 * Lets a line that winston would pass straight through its streams to its one Console transport be written at once:
 * the same format chain (`logger.format`) and the same level and silence checks, the same bytes to the same
 * stream, without the logger's Transform, the pipe, the transport's Writable, their ticks and the transport's
 * `logged` event (nobody listens to it here). A logger in any other shape (another transport added, a transport
 * with its own format or level, lines still buffered in the streams, an unknown level) goes through winston as
 * before. Audit records come one to three per task; winston's stream machinery was most of their cost.
 */
function writeDirectly(logger: winston.Logger): void {
  const viaStreams = logger.write.bind(logger);
  const [transport] = logger.transports;
  if (!(transport instanceof winston.transports.Console)) return;
  const streams = logger as unknown as StreamsState;
  const own = transport as unknown as ConsoleInternals;
  const out = globalThis.console as unknown as { _stdout?: NodeJS.WritableStream; _stderr?: NodeJS.WritableStream };
  logger.write = ((entry: winston.LogEntry) => {
    const info = entry as unknown as Info;
    if (
      streams._readableState.pipes !== transport ||
      streams._readableState.length !== 0 ||
      streams._writableState.length !== 0 ||
      streams._writableState.ending ||
      transport.format !== undefined ||
      own.forceConsole ||
      !out._stdout ||
      !out._stderr ||
      transport.listenerCount('logged') > 0
    ) {
      return viaStreams(entry);
    }
    // Logger._transform: silence, the level symbol, an unknown level (left to winston, which complains), the format.
    if (logger.silent) return true;
    if (!info[LEVEL]) info[LEVEL] = info['level'];
    if (logger.levels[info[LEVEL] as string] === undefined) return viaStreams(entry);
    const line = logger.format.transform(
      info as Parameters<winston.Logform.Format['transform']>[0],
      logger.format.options,
    ) as Info | false;
    if (!line) return true;
    // TransportStream._write: silence, exceptions, the transport's level or else the logger's.
    if (transport.silent || (line['exception'] === true && !transport.handleExceptions)) return true;
    const threshold = transport.level || logger.level;
    const allowed = logger.levels[threshold];
    const level = logger.levels[line[LEVEL] as string];
    if (threshold && !(allowed !== undefined && level !== undefined && allowed >= level)) return true;
    // Console.log: stderr for its stderr and warn levels, else stdout.
    const toStderr = own.stderrLevels[line[LEVEL] as string] || own.consoleWarnLevels[line[LEVEL] as string];
    (toStderr ? out._stderr : out._stdout).write(`${String(line[MESSAGE])}${own.eol}`);
    return true;
  }) as typeof logger.write;
}

const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');
type Info = Record<string | symbol, unknown>;
interface StreamsState {
  _readableState: { pipes: unknown; length: number };
  _writableState: { length: number; ending: boolean };
}
interface ConsoleInternals {
  forceConsole?: boolean;
  stderrLevels: Record<string, boolean | undefined>;
  consoleWarnLevels: Record<string, boolean | undefined>;
  eol: string;
}
