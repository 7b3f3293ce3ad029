// The shim's CRI-format container logs: what kubelet and crictl read.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { before, describe, it } from 'node:test';
import { parseCriLine, type CriLine } from '../../src/logs/cri-format';
import { removePaths } from '../support/cleanup';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { startShim, tempDir, type ShimProcess } from '../support/shim';
import { busybox, logFile, runContainer, waitExited, type TestPod } from '../support/pods';

function readLog(file: string): CriLine[] {
  if (!fs.existsSync(file)) return [];
  const text = fs.readFileSync(file, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'the file holds whole lines only');
  return text.split('\n').filter(Boolean).map((line) => {
    const parsed = parseCriLine(line);
    assert.ok(parsed, `CRI line: ${line.slice(0, 80)}`);
    assert.match(parsed.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    return parsed;
  });
}

/** Joins P pieces with their F line: the lines the container printed, per stream. */
function fullLines(lines: CriLine[], stream: 'stdout' | 'stderr'): string[] {
  const out: string[] = [];
  let pending = '';
  for (const l of lines.filter((x) => x.stream === stream)) {
    pending += l.content;
    if (!l.partial) {
      out.push(pending);
      pending = '';
    }
  }
  return out;
}

/** A counter printed every 20 ms: every line from the first to the last must be there once. */
const COUNTER = { command: ['sh', '-c', 'i=0; while true; do echo "line-$i"; i=$((i+1)); usleep 20000; done'] };

function assertConsecutive(lines: string[]): void {
  assert.ok(lines.length > 0, 'some lines');
  lines.forEach((line, i) => assert.equal(line, `line-${i}`, `line ${i} (neither lost nor repeated)`));
}

describe('CRI container logs', () => {
  const f = useShim({ pod: 'logs' });
  const { run } = f;
  let shim: ShimProcess;
  let pod: TestPod;
  const dirs: string[] = [];
  f.onCleanUp(() => removePaths(...dirs));

  before(() => ({ shim, pod } = f));

  it('writes stdout and stderr, a 100 KiB line, and the output right before exit', async () => {
    const script = 'echo one; echo two >&2; head -c 102400 /dev/zero | tr "\\0" a; echo; printf "no newline at the end"; echo last >&2';
    const id = await runContainer(shim.client, pod, busybox(run, 'mixed', { command: ['sh', '-c', script] }));
    await waitExited(shim.client, id);
    // No polling here: a container reported EXITED has all its output in the file already.
    const lines = readLog(logFile(pod, 'mixed'));
    assert.deepEqual(fullLines(lines, 'stdout'), ['one', 'a'.repeat(102400)]);
    assert.deepEqual(fullLines(lines, 'stderr'), ['two', 'last']);
    const pieces = lines.filter((l) => l.stream === 'stdout' && l.content.startsWith('a'));
    assert.ok(pieces.length > 1 && pieces.slice(0, -1).every((l) => l.partial) && !pieces.at(-1)!.partial, 'the long line is P pieces and a final F');
    const last = lines.filter((l) => l.stream === 'stdout').at(-1)!;
    assert.deepEqual([last.partial, last.content], [true, 'no newline at the end']);
  });

  it('writes a TTY container\'s output as stdout', async () => {
    const id = await runContainer(shim.client, pod, busybox(run, 'tty', { tty: true, command: ['sh', '-c', 'echo through a tty'] }));
    await waitExited(shim.client, id);
    const lines = readLog(logFile(pod, 'tty'));
    assert.deepEqual(lines.map((l) => [l.stream, l.partial, l.content]), [['stdout', false, 'through a tty\r']]);
  });

  it('starts a fresh file on ReopenContainerLog without losing a line', async () => {
    const id = await runContainer(shim.client, pod, busybox(run, 'rotate', COUNTER));
    const file = logFile(pod, 'rotate');
    await waitFor('some lines', () => readLog(file).length >= 10);
    fs.renameSync(file, `${file}.1`);
    await shim.client.runtime.ReopenContainerLog({ containerId: id });
    assert.ok(fs.existsSync(file), 'a new file is at the log path');
    await waitFor('lines in the new file', () => readLog(file).length >= 10);
    await shim.client.runtime.StopContainer({ containerId: id, timeout: 0 });
    await waitExited(shim.client, id);
    const rotated = fullLines(readLog(`${file}.1`), 'stdout');
    const fresh = fullLines(readLog(file), 'stdout');
    assert.ok(rotated.length >= 10 && fresh.length >= 10);
    assertConsecutive([...rotated, ...fresh]);
  });

  it('loses and repeats no line across a shim restart while the container prints', async () => {
    const rootDir = tempDir('restart-root');
    dirs.push(rootDir);
    let first: ShimProcess | undefined = await startShim({ rootDir });
    let second: ShimProcess | undefined;
    try {
      const id = await runContainer(first.client, pod, busybox(run, 'restart', COUNTER));
      const file = logFile(pod, 'restart');
      await waitFor('some lines', () => readLog(file).length >= 10);
      await first.stop();
      first = undefined;
      const atStop = readLog(file).length;
      // The container keeps printing while no shim is there to copy its output.
      await waitFor('the container to print on', async () => {
        const { dockerApi } = await import('../support/images');
        const raw = await dockerApi().getContainer(id).logs({ stdout: true, tail: 1 });
        const n = Number(/line-(\d+)/.exec(raw.toString('latin1'))?.[1] ?? -1);
        return n >= atStop + 20;
      });
      second = await startShim({ rootDir });
      await waitFor('the new shim to catch up and go on', () => readLog(file).length >= atStop + 40);
      await second.client.runtime.StopContainer({ containerId: id, timeout: 0 });
      await waitExited(second.client, id);
      assertConsecutive(fullLines(readLog(file), 'stdout'));
    } finally {
      await first?.stop();
      await second?.stop();
    }
  });
});
