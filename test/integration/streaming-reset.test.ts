// Hostile streams against the real shim, second round (issue 26): a client that resets its
// stdout and keeps the session must not leave the shim reading the command's output at full
// speed to drop it (what it reads, /proc/<pid>/io's rchar, and its CPU time, from
// /proc/<pid>/stat), and SYN_STREAMs the session refuses,
// or whose header block splits into tens of thousands of values, end the session cheaply.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { before, describe, it } from 'node:test';
import { cpuMs, openFiles } from '../../bench/procfs';
import { ControlType, GOAWAY_PROTOCOL_ERROR, MAX_HEADER_BLOCK_BYTES, RST_CANCEL, RST_REFUSED_STREAM, rstStreamPayload } from '../../src/streaming/spdy/framing';
import { MAX_REFUSED_STREAMS } from '../../src/streaming/spdy/session';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { SLEEP_FOREVER } from '../support/pods';
import { parseStatus, rawSpdyConnect, type RawSpdyClient } from '../support/streaming-clients';

const MiB = 1024 * 1024;
const V4 = 'v4.channel.k8s.io';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bytes a process has read with read(2) and the like, sockets included (/proc/<pid>/io's rchar). */
function bytesRead(pid: number): number {
  const m = /^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
  if (!m) throw new Error(`no rchar for ${pid}`);
  return Number(m[1]);
}

describe('hostile SPDY streams against the real shim: reset output, refused streams, header bombs', () => {
  const f = useShim({ pod: 'hostile-streams' });
  let sleeper: string;
  let pid: number;

  before(async () => {
    sleeper = await f.runContainer('sleeper', SLEEP_FOREVER);
    pid = f.shim.child.pid!;
  });

  /** An exec session of `cmd` with its error and stdout streams open, as kubectl opens them. */
  async function execSession(cmd: string[]): Promise<{ spdy: RawSpdyClient; error: number; stdout: number }> {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd, stdout: true });
    const spdy = await rawSpdyConnect(url, V4);
    const error = await spdy.open({ streamType: 'error' }, { fin: true });
    const stdout = await spdy.open({ streamType: 'stdout' }, { fin: true });
    return { spdy, error, stdout };
  }

  async function versionAnswers(): Promise<void> {
    const started = Date.now();
    assert.equal((await f.client.runtime.Version({})).runtimeName, 'docker');
    assert.ok(Date.now() - started < 2000, 'the shim answers at once');
  }

  it('stops reading a command’s output once the client reset its stdout, lets the session go when the client does, and lets a quiet command end', async () => {
    const socketsBefore = openFiles(pid).sockets;
    const { spdy, stdout } = await execSession(['cat', '/dev/zero']);
    await spdy.until('the first MiB of output', () => spdy.received >= MiB);
    spdy.control(ControlType.RstStream, rstStreamPayload(stdout, RST_CANCEL));
    // What was on its way when the reset went is still read; the measurement starts after it.
    await sleep(300);
    const cpuBefore = cpuMs(pid);
    const readBefore = bytesRead(pid);
    const receivedBefore = spdy.received;
    await sleep(3000);
    const used = cpuMs(pid) - cpuBefore;
    const read = bytesRead(pid) - readBefore;
    console.log(`stdout reset, session kept: in 3 s the shim used ${used.toFixed(0)} ms of CPU and read ${(read / MiB).toFixed(1)} MiB`);
    // Before, it read the output on at full speed (hundreds of MiB a second) to drop it.
    // The bytes read are the proof; the CPU time is logged only: a fresh shim's own background
    // work (its storage walks) costs as much on a loaded machine.
    assert.ok(read < 16 * MiB, `the shim read ${read} bytes in 3 s after the client reset its stdout`);
    assert.equal(spdy.received, receivedBefore, 'nothing more is sent for the reset stream');
    assert.equal(spdy.closed, false, 'the session stays while the client keeps it');
    await versionAnswers();

    spdy.destroy();
    // The session and Docker's connection go with the client.
    await waitFor('the shim to close the session and Docker’s connection', () => openFiles(pid).sockets <= socketsBefore, {
      timeoutMs: 10_000,
      explain: () => `the shim holds ${openFiles(pid).sockets} sockets, ${socketsBefore} before the exec`,
    });

    // A command with little left to say after the reset still ends, and its exit code is told.
    const quiet = await execSession(['sh', '-c', 'sleep 0.5; echo bye; exit 3']);
    quiet.spdy.control(ControlType.RstStream, rstStreamPayload(quiet.stdout, RST_CANCEL));
    await quiet.spdy.until('the exit status', () => quiet.spdy.finished(quiet.error));
    assert.deepEqual(parseStatus(quiet.spdy.dataOf(quiet.error)).details?.causes, [{ reason: 'ExitCode', message: '3' }]);
    quiet.spdy.destroy();
  });

  it(`ends a session that refused ${MAX_REFUSED_STREAMS} streams with GOAWAY, and the shim answers on`, async () => {
    const { spdy } = await execSession(['sleep', '3600']);
    const opened: number[] = [];
    for (let i = 0; i < 3 * MAX_REFUSED_STREAMS; i++) opened.push(await spdy.open({ streamType: 'bogus' }, { waitReply: false }));
    await spdy.until('GOAWAY', () => spdy.goAwayStatus !== undefined);
    assert.equal(spdy.goAwayStatus, GOAWAY_PROTOCOL_ERROR);
    const refused = opened.filter((id) => spdy.resetStatus(id) === RST_REFUSED_STREAM);
    assert.equal(refused.length, MAX_REFUSED_STREAMS, 'the streams refused before the session ended');
    await spdy.until('the connection to close', () => spdy.closed);
    await versionAnswers();
  });

  it('ends a session at the first header block that splits into tens of thousands of values, at little cost', async () => {
    const { spdy } = await execSession(['sleep', '3600']);
    // One value of NULs fills the block: some 100 bytes compressed, 65,521 values split out.
    const bomb = { junk: '\0'.repeat(MAX_HEADER_BLOCK_BYTES - 16) };
    const cpuBefore = cpuMs(pid);
    // Before the bound, 3,000 of these cost the shim some 7 s of CPU and the session went on.
    const opened: number[] = [];
    for (let i = 0; i < 3000 && !spdy.closed; i++) opened.push(await spdy.open(bomb, { waitReply: false }));
    await spdy.until('GOAWAY', () => spdy.goAwayStatus !== undefined);
    await spdy.until('the connection to close', () => spdy.closed);
    const used = cpuMs(pid) - cpuBefore;
    console.log(`a burst of header bombs: the shim used ${used.toFixed(0)} ms of CPU`);
    assert.equal(spdy.goAwayStatus, GOAWAY_PROTOCOL_ERROR);
    assert.deepEqual(opened.filter((id) => spdy.resetStatus(id) !== undefined), [], 'the first block ended the session: no stream of them was answered');
    assert.ok(used < 1000, `the shim used ${used} ms of CPU on the burst`);
    await versionAnswers();
  });
});
