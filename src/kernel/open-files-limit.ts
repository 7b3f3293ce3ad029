// The process's descriptor limit (RLIMIT_NOFILE). Node raises the soft limit to the hard one
// itself as it starts (node.cc, PlatformInit), as containerd and dockerd do for themselves, so
// the shim only reads what it runs with: start-up logs it and sizes the Docker socket pool
// from it (docker/socket-pool.ts). Node has no getrlimit; /proc/self/limits says the same.
import * as fs from 'node:fs';

interface OpenFilesLimit {
  /** The limit in force (Infinity for "unlimited"). */
  soft: number;
  /** What it may be raised to. */
  hard: number;
}

/** What Linux's default soft limit is, assumed when /proc cannot be read. */
const ASSUMED_OPEN_FILES: OpenFilesLimit = { soft: 1024, hard: 1024 };

/** The "Max open files" line of a /proc/<pid>/limits text; undefined without one. Pure. */
export function parseOpenFilesLimit(limitsText: string): OpenFilesLimit | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)\s/m.exec(limitsText);
  if (!m) return undefined;
  const value = (s: string): number => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: value(m[1]!), hard: value(m[2]!) };
}

/** This process's limit, from /proc/self/limits (ASSUMED_OPEN_FILES if that cannot be read). */
export function readOpenFilesLimit(): OpenFilesLimit & { known: boolean } {
  let text = '';
  try {
    text = fs.readFileSync('/proc/self/limits', 'utf8');
  } catch {
    // Not Linux, or no /proc: the assumption below.
  }
  const limit = parseOpenFilesLimit(text);
  return limit ? { ...limit, known: true } : { ...ASSUMED_OPEN_FILES, known: false };
}
