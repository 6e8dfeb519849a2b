import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Request logging writes only what it names (never headers or
 * bodies); the redaction paths are a second line of defence for secrets.
 */
export function createLogger(level: string, service: string): Logger {
  return pino({
    level,
    base: { service, pid: process.pid },
    redact: {
      paths: ['secret', '*.secret', 'client_secret', '*.client_secret', 'authorization', '*.authorization', 'headers'],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
