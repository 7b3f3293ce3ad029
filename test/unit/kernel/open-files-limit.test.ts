// The descriptor limit as the shim reads it (src/kernel/open-files-limit.ts), and the fact it
// rests on: Node raises the soft limit to the hard one as it starts.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseOpenFilesLimit } from '../../../src/kernel/open-files-limit';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            1024                 524288               files     
Max locked memory         65536                65536                bytes     
`;

describe('the descriptor limit', () => {
  it('is read from the "Max open files" line, "unlimited" as Infinity, and nothing without one', () => {
    assert.deepEqual(parseOpenFilesLimit(LIMITS), { soft: 1024, hard: 524288 });
    assert.deepEqual(parseOpenFilesLimit(LIMITS.replace('1024     ', 'unlimited').replace('524288', 'unlimited')), { soft: Infinity, hard: Infinity });
    assert.equal(parseOpenFilesLimit('Max cpu time unlimited unlimited seconds\n'), undefined);
  });

  it('is the hard limit in a Node started with a lower soft one: Node raised it', () => {
    const module = path.resolve(__dirname, '../../../src/kernel/open-files-limit.js');
    const script = `console.log(JSON.stringify(require(${JSON.stringify(module)}).readOpenFilesLimit()))`;
    const hard = Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim());
    const soft = Math.min(hard, 512);
    const seen = JSON.parse(
      execFileSync('sh', ['-c', `ulimit -Sn ${soft} && ulimit -Sn && exec "$0" -e "$1"`, process.execPath, script], { encoding: 'utf8' }).split('\n')[1]!,
    ) as { soft: number; hard: number; known: boolean };
    assert.deepEqual(seen, { soft: hard, hard, known: true }, `started with soft ${soft}`);
  });
});
