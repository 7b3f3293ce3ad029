// One pino logger for the process. JSON lines by default (what log collectors want); a
// human-readable form when --log-format=pretty, or "auto" and stderr is a terminal.
import pino from 'pino';

export type Logger = pino.Logger;
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
export type LogFormat = 'json' | 'pretty' | 'auto';

/** Field names whose values are secrets; pino replaces them wherever they appear in a log object. */
const REDACTED_PATHS = [
  'password',
  'auth',
  'identityToken',
  'registryToken',
  'identitytoken',
  'registrytoken',
  '*.password',
  '*.auth',
  '*.identityToken',
  '*.registryToken',
  '*.identitytoken',
  '*.registrytoken',
];

export function createLogger(level: LogLevel, format: LogFormat = 'auto'): Logger {
  const pretty = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  const options: pino.LoggerOptions = {
    level,
    base: { component: 'cri-docker-shim' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  if (pretty) {
    // In this process rather than as a pino transport: a transport is a worker thread that finds
    // pino-pretty by its file path, which the one-file bundle (scripts/bundle.mjs) does not have.
    const prettyStream = require('pino-pretty') as typeof import('pino-pretty');
    return pino(options, prettyStream.build({ destination: 2, sync: true }));
  }
  return pino(options, pino.destination({ dest: 2, sync: true }));
}

/** A logger that writes nowhere, for unit tests of code that logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
