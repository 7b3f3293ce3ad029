import * as fs from 'node:fs';

/** A file's text, refusing a symlink at its path (ELOOP): for files the shim did not make itself. */
export function readTextNoFollow(file: string): string {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}
