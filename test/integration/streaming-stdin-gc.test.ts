// What exec stdin costs the shim's garbage collector (issue 30 point 3). Every read of the
// client's connection is a fresh 64 KiB buffer; with V8's old generation limit at its default
// growth, the external memory they add started a mark-compact (the whole heap marked) every
// ~8-16 MiB streamed, ~45 per GiB, long before a young collection freed the buffers: 40 % of
// the shim's CPU on stdin. src/util/heap-growth.ts sets the growth while a stream is open so a young
// collection comes first. The shim runs with a probe counting its collections (gc-probe.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { useShim } from '../support/fixture';
import { GC_PROBE_FILE_ENV, GC_PROBE_FLAGS, readGcCounts } from '../support/gc-probe';
import { chunksOf, CLIENT_CHUNK, SpdySinkClient, wsSend, wsSink } from '../support/stream-sinks';
import { tempDir } from '../support/temp';

const MiB = 1024 * 1024;
/** Streamed per transport: on main ~45 mark-compacts per GiB came of it. */
const STREAMED = 384 * MiB;
/**
 * Mark-compacts allowed per transfer. Node 20 took at most 4 (what else the shim does meanwhile,
 * its storage pass). Node 24's V8 starts one each time the buffers' external memory passes its
 * soft limit, whatever the heap growth (0 scavenges between them): 5 to 11 measured here, more
 * over WebSocket, whose reads are smaller. The bound still catches the old rate (one every
 * 8-16 MiB: 24 to 48); reading into reused buffers, which would take the external memory away,
 * is the stdin work still open.
 */
const MAX_MARK_COMPACTS = 16;
const ZEROS = Buffer.alloc(CLIENT_CHUNK);
const CONSUME = ['dd', 'of=/dev/null', 'bs=1M', 'iflag=fullblock'];

const probeDir = tempDir('gc-probe');
const probeFile = path.join(probeDir, 'counts.json');

describe('exec stdin: a transfer costs the shim no mark-compact every few MiB', () => {
  const f = useShim({ pod: 'stdin-gc', nodeFlags: [...GC_PROBE_FLAGS], env: { [GC_PROBE_FILE_ENV]: probeFile } });
  f.onCleanUp(() => fs.rmSync(probeDir, { recursive: true, force: true }));
  let container: string;

  before(async () => {
    container = await f.runContainer('sink', { command: ['sleep', '3600'] });
  });

  async function execUrl(): Promise<string> {
    return (await f.client.runtime.Exec({ containerId: container, cmd: CONSUME, stdin: true, stdout: true, stderr: true })).url;
  }

  /** dd's report of what it read: `<records>+0 records in` for whole MiB. */
  function assertReadAll(ddStderr: string): void {
    assert.match(ddStderr, new RegExp(`^${STREAMED / MiB}\\+0 records in`, 'm'), ddStderr);
  }

  async function spdyStdin(): Promise<void> {
    const spdy = await SpdySinkClient.connect(await execUrl(), 'v4.channel.k8s.io');
    try {
      const error = await spdy.open({ streamType: 'error' }, { fin: true, keep: true });
      const input = await spdy.open({ streamType: 'stdin' });
      const out = await spdy.open({ streamType: 'stdout' }, { fin: true });
      const err = await spdy.open({ streamType: 'stderr' }, { fin: true, keep: true });
      await spdy.send(input, chunksOf(ZEROS, STREAMED));
      await Promise.all([spdy.drained(out), spdy.drained(err), spdy.drained(error)]);
      assertReadAll(spdy.kept(err));
    } finally {
      spdy.close();
    }
  }

  async function wsStdin(): Promise<void> {
    const link = await wsSink(await execUrl(), 'v5.channel.k8s.io', {}, [2, 3], { zeroMask: true });
    await wsSend(link, 0, chunksOf(ZEROS, STREAMED));
    await link.closed;
    assertReadAll(link.kept(2));
  }

  for (const [transport, transfer] of [
    ['SPDY', spdyStdin],
    ['WebSocket', wsStdin],
  ] as const) {
    it(`${STREAMED / MiB} MiB over ${transport}: at most ${MAX_MARK_COMPACTS} mark-compacts`, async () => {
      const before = readGcCounts(probeFile);
      await transfer();
      const after = readGcCounts(probeFile);
      const majors = after.major - before.major;
      console.log(`${transport}: ${majors} mark-compacts, ${after.minor - before.minor} scavenges for ${STREAMED / MiB} MiB`);
      assert.ok(majors <= MAX_MARK_COMPACTS, `${majors} mark-compacts for ${STREAMED / MiB} MiB of stdin`);
    });
  }
});
