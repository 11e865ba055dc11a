// Structured logs: JSON where a machine reads them, colourful lines in a terminal.
import winston from 'winston';

export type Logger = winston.Logger;
export type LogFormat = 'json' | 'pretty' | 'auto';

export function createLogger(options: { service: string; level: string; format?: LogFormat }): Logger {
  const format = options.format ?? 'auto';
  const pretty =
    format === 'pretty' || (format === 'auto' && process.stdout.isTTY && process.env['NODE_ENV'] !== 'production');
  return winston.createLogger({
    level: options.level,
    defaultMeta: { service: options.service },
    format: pretty
      ? winston.format.combine(
          winston.format.colorize(),
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.printf(({ level, message, timestamp, service, ...fields }) => {
            const rest = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
            return `${String(timestamp)} ${String(service)} ${level} ${String(message)}${rest}`;
          }),
        )
      : winston.format.combine(
          winston.format.timestamp(),
          winston.format.errors({ stack: true }),
          winston.format.json(),
        ),
    transports: [new winston.transports.Console()],
  });
}
