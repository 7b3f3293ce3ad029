import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { resumePointOfFile } from '../../../src/logs/follower';

describe('CRI log resume point', () => {
  it('cuts a line torn by a crash before resuming', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-torn-'));
    try {
      const file = `${dir}/0.log`;
      const whole = '2026-11-22T02:04:17.123456789Z stdout F whole\n';
      fs.writeFileSync(file, `${whole}2026-11-22T02:04:18.000000000Z stdout F to`);
      assert.deepEqual(await resumePointOfFile(file), { timestamp: '2026-11-22T02:04:17.123456789Z', count: 1, stream: 'stdout' });
      assert.equal(fs.readFileSync(file, 'utf8'), whole);
      assert.equal(await resumePointOfFile(`${dir}/missing.log`), undefined);
      // A file made at StartContainer or by a reopen, before any output: no point of its own.
      fs.writeFileSync(`${dir}/empty.log`, '');
      assert.equal(await resumePointOfFile(`${dir}/empty.log`), undefined);
      assert.equal(fs.readFileSync(`${dir}/empty.log`, 'utf8'), '');
      // Only a torn line: cut to empty, and no point either.
      fs.writeFileSync(`${dir}/torn.log`, '2026-11-22T02:04:18.000000000Z stdout F to');
      assert.equal(await resumePointOfFile(`${dir}/torn.log`), undefined);
      assert.equal(fs.readFileSync(`${dir}/torn.log`, 'utf8'), '');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never follows a symlink put at the log path, nor touches what is not a regular file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-torn-'));
    try {
      // Another file with a torn-looking last line: root must not truncate it through the link.
      const victim = `${dir}/victim`;
      fs.writeFileSync(victim, 'line one\nno newline at the end');
      fs.symlinkSync(victim, `${dir}/0.log`);
      assert.equal(await resumePointOfFile(`${dir}/0.log`), undefined);
      assert.equal(fs.readFileSync(victim, 'utf8'), 'line one\nno newline at the end', 'the link\'s target is untouched');
      fs.mkdirSync(`${dir}/dir.log`);
      assert.equal(await resumePointOfFile(`${dir}/dir.log`), undefined);
      execFileSync('mkfifo', [`${dir}/fifo.log`]);
      assert.equal(await resumePointOfFile(`${dir}/fifo.log`), undefined, 'a FIFO is not waited on');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
