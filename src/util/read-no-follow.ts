import * as fs from 'node:fs';

/**
 * A file's text, refusing a symlink at its path (ELOOP) and anything but a regular file (a FIFO
 * would block the read): for files the shim did not make itself.
 */
export function readTextNoFollow(file: string): string {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    if (!fs.fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'ENOTREG' });
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}
