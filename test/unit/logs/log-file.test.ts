import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { FailedPreconditionError, PermissionDeniedError, ResourceExhaustedError } from '../../../src/errors';
import { logFileError, openContainerLog } from '../../../src/logs/log-file';

function umask(): number {
  const m = /^Umask:\s+([0-7]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  assert.ok(m);
  return parseInt(m, 8);
}

function withDir(run: (dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-logfile-'));
    try {
      await run(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
}

describe('container log file', () => {
  it('creates a missing directory (0755) and an empty file (0640), as containerd does', withDir(async (dir) => {
    const file = path.join(dir, 'app', '0.log');
    const handle = await openContainerLog(file);
    await handle.close();
    assert.equal(fs.statSync(file).size, 0);
    assert.equal(fs.statSync(file).mode & 0o777, 0o640 & ~umask());
    assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o755 & ~umask());
  }));

  it('appends to a file that is already there, whatever position a write asks for', withDir(async (dir) => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(file, 'first\n');
    const handle = await openContainerLog(file);
    try {
      await handle.write('second\n');
      await handle.write('third\n', 0, 'utf8');
    } finally {
      await handle.close();
    }
    // O_APPEND: the write lands at the end of the file as it is now, whatever position is asked.
    assert.equal(fs.readFileSync(file, 'utf8'), 'first\nsecond\nthird\n');
  }));

  it('refuses a symbolic link at the log path', withDir(async (dir) => {
    const target = path.join(dir, 'elsewhere');
    fs.writeFileSync(target, '');
    const file = path.join(dir, '0.log');
    fs.symlinkSync(target, file);
    await assert.rejects(openContainerLog(file), (err: Error) => {
      assert.ok(err instanceof FailedPreconditionError);
      assert.match(err.message, /0\.log: it is a symbolic link/);
      return true;
    });
  }));

  it('classifies what the host refuses', () => {
    const errno = (code: string) => Object.assign(new Error(`${code}: x`), { code });
    assert.ok(logFileError('/l', errno('EACCES')) instanceof PermissionDeniedError);
    assert.ok(logFileError('/l', errno('EPERM')) instanceof PermissionDeniedError);
    assert.ok(logFileError('/l', errno('ENOSPC')) instanceof ResourceExhaustedError);
    assert.ok(logFileError('/l', errno('ENOTDIR')) instanceof FailedPreconditionError);
    assert.match(logFileError('/l', errno('ENOTDIR')).message, /^cannot open the container log \/l: ENOTDIR/);
  });
});
