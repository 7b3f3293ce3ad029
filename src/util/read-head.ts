import * as fs from 'node:fs';

/**
 * Up to `maxBytes` of `file` from its start, as text; undefined when it cannot be read. For
 * files whose head is all that is wanted (a PID file, /proc files that can be long), so the read
 * is bounded whatever the file holds. O_NONBLOCK: a FIFO put there does not block the read.
 */
export function readHead(file: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(maxBytes);
    return buf.toString('utf8', 0, fs.readSync(fd, buf, 0, maxBytes, 0));
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}
