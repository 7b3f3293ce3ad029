// The shim's CRI-format container logs: what kubelet and crictl read.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { finished } from 'node:stream/promises';
import { before, describe, it } from 'node:test';
import { parseCriLine, type CriLine } from '../../src/logs/cri-format';
import type { CriClient } from '../support/client';
import { removePaths } from '../support/cleanup';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { startShim, tempDir, type ShimProcess } from '../support/shim';
import { busybox, logFile, runContainer, sh, SLEEP_FOREVER, waitExited, type TestPod } from '../support/pods';
import { testLabels } from '../support/cleanup';
import { TEST_BUSYBOX_IMAGE } from '../support/images';
import { CONTAINER_LOG_PATH_LABEL, CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../../src/conventions/labels';
import { dockerdPid } from '../../bench/procfs';

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

/** Makes a silent container print one line, as its main process would: through PID 1's stdout. */
async function printLine(client: CriClient, id: string, text: string): Promise<void> {
  await sh(client, id, `echo ${text} > /proc/1/fd/1`);
}

/** The same, straight through Docker (while no shim is running). */
async function printLineWithoutShim(id: string, text: string): Promise<void> {
  const exec = await dockerApi().getContainer(id).exec({ Cmd: ['sh', '-c', `echo ${text} > /proc/1/fd/1`], AttachStdout: true, AttachStderr: true });
  // The attached stream ends when the command does (a detached start would leave its
  // connection open and keep the test process alive).
  const stream = await exec.start({});
  stream.resume();
  await finished(stream);
  const info = await exec.inspect();
  assert.equal(info.ExitCode, 0, 'the exec printed');
}

/** Mode bits a file created with `mode` gets under this process's umask (the shim inherits it). */
function underUmask(mode: number): number {
  const umask = /^Umask:\s+([0-7]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  assert.ok(umask, 'umask from /proc/self/status');
  return mode & ~parseInt(umask, 8);
}

/** The descriptors a process holds open on `file` (by /proc/<pid>/fd's links). */
function descriptorsOn(pid: number, file: string): number {
  return fs.readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === file;
    } catch {
      return false;
    }
  }).length;
}

async function jsonLogPath(id: string): Promise<string> {
  const { LogPath } = await dockerApi().getContainer(id).inspect();
  return LogPath;
}

/** Which source the shim said it follows the container's log from (its debug log). */
function followedFrom(shim: ShimProcess, id: string): string[] {
  return shim
    .output()
    .split('\n')
    .filter((l) => l.includes('following the container log') && l.includes(id))
    .map((l) => (JSON.parse(l) as { source: string }).source);
}

/**
 * A container of `pod` made straight through Docker as CreateContainer makes one, but with a
 * json-file log Docker rotates every `maxSize` (the shim's own containers rotate at 50 MB).
 */
async function createWithSmallDockerLog(run: string, pod: TestPod, name: string, command: string[], maxSize: string): Promise<string> {
  const created = await dockerApi().createContainer({
    name: `k8s_${name}_${pod.config.metadata!.name}_cds-test_${pod.config.metadata!.uid}_0`,
    Image: TEST_BUSYBOX_IMAGE,
    Cmd: command,
    Labels: { ...testLabels(run), [CONTAINER_TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: pod.id, [CONTAINER_LOG_PATH_LABEL]: logFile(pod, name) },
    HostConfig: { NetworkMode: `container:${pod.id}`, LogConfig: { Type: 'json-file', Config: { 'max-size': maxSize, 'max-file': '2' } } },
  });
  return created.id;
}

async function waitForLine(file: string, text: string): Promise<void> {
  await waitFor(`${text} in ${path.basename(file)}`, () => fullLines(readLog(file), 'stdout').includes(text));
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

  it('has the log file of a container that never prints when StartContainer returns, and reopens it', async () => {
    const file = logFile(pod, 'silent');
    // kubelet makes the container's log directory; when it is missing the shim makes it, as containerd does.
    assert.equal(fs.existsSync(path.dirname(file)), false);
    const id = await runContainer(shim.client, pod, busybox(run, 'silent', SLEEP_FOREVER));
    // No polling: the file must be there the moment StartContainer has returned.
    assert.ok(fs.existsSync(file), 'the log file exists when StartContainer returns');
    const st = fs.statSync(file);
    assert.ok(st.isFile());
    assert.equal(st.size, 0);
    assert.equal(st.mode & 0o777, underUmask(0o640), 'file mode 0640');
    assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, underUmask(0o755), 'directory mode 0755');

    // kubelet's rotation: rename, then ReopenContainerLog; a fresh empty file is at the path at once.
    fs.renameSync(file, `${file}.1`);
    await shim.client.runtime.ReopenContainerLog({ containerId: id });
    assert.ok(fs.existsSync(file), 'a new file is at the log path after ReopenContainerLog');
    assert.equal(fs.statSync(file).size, 0);
    assert.notEqual(fs.statSync(file).ino, fs.statSync(`${file}.1`).ino, 'a new file, not the rotated one');

    await printLine(shim.client, id, 'hello-after-rotation');
    await waitForLine(file, 'hello-after-rotation');
    assert.deepEqual(readLog(`${file}.1`), [], 'nothing went to the rotated file');

    await shim.client.runtime.StopContainer({ containerId: id, timeout: 0 });
    await waitExited(shim.client, id);
    assert.deepEqual(fullLines(readLog(file), 'stdout'), ['hello-after-rotation'], 'written once');
    assert.deepEqual(readLog(`${file}.1`), []);
  });

  it('keeps writing the old file when the new one cannot be made, and never writes through a symlink', async () => {
    const id = await runContainer(shim.client, pod, busybox(run, 'symlink', SLEEP_FOREVER));
    const file = logFile(pod, 'symlink');
    await printLine(shim.client, id, 'before');
    await waitForLine(file, 'before');
    const target = `${file}.target`;
    fs.writeFileSync(target, '');
    fs.renameSync(file, `${file}.1`);
    fs.symlinkSync(target, file);
    await assert.rejects(shim.client.runtime.ReopenContainerLog({ containerId: id }), (err: { code?: number; details?: string }) => {
      assert.equal(err.code, Code.FAILED_PRECONDITION);
      assert.match(err.details ?? '', /symbolic link/);
      return true;
    });
    // What kubelet does when the reopen fails: it renames the rotated file back.
    fs.unlinkSync(file);
    fs.renameSync(`${file}.1`, file);
    await printLine(shim.client, id, 'after');
    await waitForLine(file, 'after');
    await shim.client.runtime.StopContainer({ containerId: id, timeout: 0 });
    await waitExited(shim.client, id);
    assert.deepEqual(fullLines(readLog(file), 'stdout'), ['before', 'after']);
    assert.equal(fs.readFileSync(target, 'utf8'), '', 'nothing was written through the symlink');
  });

  it('resumes a silent container\'s empty log file across shim restarts, before and after a rotation', async () => {
    const rootDir = tempDir('silent-restart-root');
    dirs.push(rootDir);
    const file = logFile(pod, 'silent-restart');
    let current: ShimProcess | undefined = await startShim({ rootDir });
    try {
      const id = await runContainer(current.client, pod, busybox(run, 'silent-restart', SLEEP_FOREVER));
      assert.ok(fs.existsSync(file), 'the log file exists when StartContainer returns');
      // The shim goes away while the file is still empty (no resume point in it, none saved).
      await current.stop();
      current = undefined;
      await printLineWithoutShim(id, 'while-down-1');
      current = await startShim({ rootDir });
      await waitForLine(file, 'while-down-1');

      // Rotate, then restart again while the new file is empty: the point saved at the reopen
      // must keep the first line out of it.
      fs.renameSync(file, `${file}.1`);
      await current.client.runtime.ReopenContainerLog({ containerId: id });
      assert.equal(fs.statSync(file).size, 0);
      await current.stop();
      current = undefined;
      await printLineWithoutShim(id, 'while-down-2');
      current = await startShim({ rootDir });
      await waitForLine(file, 'while-down-2');

      await current.client.runtime.StopContainer({ containerId: id, timeout: 0 });
      await waitExited(current.client, id);
      assert.deepEqual(fullLines(readLog(`${file}.1`), 'stdout'), ['while-down-1']);
      assert.deepEqual(fullLines(readLog(file), 'stdout'), ['while-down-2']);
    } finally {
      await current?.stop();
    }
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
  it('reads a json-file container\'s log from Docker\'s file: no reader of it in dockerd, one inotify instance in the shim', async () => {
    const id = await runContainer(shim.client, pod, busybox(run, 'from-file', COUNTER));
    const file = logFile(pod, 'from-file');
    await waitFor('some lines', () => readLog(file).length >= 5);
    assert.deepEqual(followedFrom(shim, id), ['json-file']);
    const jsonLog = await jsonLogPath(id);
    // Docker's log API follower had dockerd open the file a second time, to read it.
    assert.equal(descriptorsOn(dockerdPid(), jsonLog), 1, 'dockerd holds the file for writing only');
    assert.equal(descriptorsOn(shim.child.pid!, jsonLog), 1, 'the shim reads it through one descriptor');
    const inotify = fs.readdirSync(`/proc/${shim.child.pid!}/fd`).filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/${shim.child.pid!}/fd/${fd}`) === 'anon_inode:inotify';
      } catch {
        return false;
      }
    });
    assert.equal(inotify.length, 1, 'one inotify instance for every watch (libuv\'s, per event loop)');
    await shim.client.runtime.StopContainer({ containerId: id, timeout: 0 });
    await waitExited(shim.client, id);
    assertConsecutive(fullLines(readLog(file), 'stdout'));
    assert.equal(descriptorsOn(shim.child.pid!, jsonLog), 0, 'closed once the container stopped and all was read');
  });

  it('follows Docker\'s rotation of its json-file log without losing or repeating a line', async () => {
    const count = 800;
    const script = `i=0; while [ $i -lt ${count} ]; do echo "line-$i"; i=$((i+1)); usleep 2000; done`;
    const id = await createWithSmallDockerLog(run, pod, 'docker-rotates', ['sh', '-c', script], '10k');
    // Made behind its back: the shim knows it once Docker's event has reached its cache.
    await waitFor('the shim to list the container', async () => (await shim.client.runtime.ListContainers({ filter: { id } })).containers.length === 1);
    await shim.client.runtime.StartContainer({ containerId: id });
    const jsonLog = await jsonLogPath(id);
    await waitFor('Docker to rotate its log', () => fs.existsSync(`${jsonLog}.1`));
    await waitExited(shim.client, id);
    assert.deepEqual(followedFrom(shim, id), ['json-file']);
    const lines = fullLines(readLog(logFile(pod, 'docker-rotates')), 'stdout');
    assertConsecutive(lines);
    assert.equal(lines.length, count);
  });

  it('loses and repeats no line when the shim is killed (SIGKILL) while the container prints', async () => {
    const rootDir = tempDir('kill-root');
    dirs.push(rootDir);
    let first: ShimProcess | undefined = await startShim({ rootDir });
    let second: ShimProcess | undefined;
    try {
      const id = await runContainer(first.client, pod, busybox(run, 'killed', COUNTER));
      const file = logFile(pod, 'killed');
      // Past the first position save, so the restart starts from a saved offset.
      await waitFor('some lines', () => readLog(file).length >= 150, { timeoutMs: 30_000 });
      await first.stop('SIGKILL');
      first = undefined;
      const atKill = readLog(file).length;
      second = await startShim({ rootDir });
      await waitFor('the new shim to go on', () => readLog(file).length >= atKill + 40);
      assert.deepEqual(followedFrom(second, id), ['json-file']);
      assert.doesNotMatch(second.output(), /position saved is gone/, 'resumed at the saved offset');
      await second.client.runtime.StopContainer({ containerId: id, timeout: 0 });
      await waitExited(second.client, id);
      assertConsecutive(fullLines(readLog(file), 'stdout'));
    } finally {
      await first?.stop();
      await second?.stop();
    }
  });
});
