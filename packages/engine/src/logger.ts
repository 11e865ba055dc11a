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
  return winston.createLogger({
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
}
