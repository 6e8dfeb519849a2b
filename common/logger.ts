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

/**
 * Without an 'error' listener BullMQ prints each reconnect failure as a raw stack
 * trace. One JSON warning per `everyMs` is enough while a dependency is down.
 */
export function logQueueErrors(
  emitters: Array<{ name: string; on(event: 'error', listener: (err: Error) => void): unknown }>,
  logger: Logger,
  everyMs = 10_000,
): void {
  let loggedAt = 0;
  for (const emitter of emitters) {
    emitter.on('error', (err) => {
      if (Date.now() - loggedAt < everyMs) return;
      loggedAt = Date.now();
      logger.warn({ queue: emitter.name, err: err.message }, 'queue connection error');
    });
  }
}
