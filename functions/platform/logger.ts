import { Logger } from '@aws-lambda-powertools/logger';

/** Powertools logger for one bounded context. Level from LOG_LEVEL (default INFO; the local runtime sets WARN). */
export function createLogger(serviceName: string): Logger {
  const level = (process.env['LOG_LEVEL'] ?? 'INFO').toUpperCase();
  return new Logger({ serviceName, logLevel: level as 'INFO' });
}

export type { Logger };
