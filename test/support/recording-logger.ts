// A logger whose lines a unit test can read, for code whose logging is part of what it promises.
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Logger } from '../../src/util/logger';

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export function recordingLogger(level: pino.Level = 'debug'): { log: Logger; lines: () => LogLine[] } {
  const out: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (out.push(chunk.toString()), done()) });
  return { log: pino({ level }, sink), lines: () => out.map((l) => JSON.parse(l) as LogLine) };
}
