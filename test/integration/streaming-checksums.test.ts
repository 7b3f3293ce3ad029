// Every byte of a large transfer arrives, in order, on each streaming path the shim copies
// through (issue 30: the copies were cut down there): 64 MiB of random bytes through exec
// stdout and stdin and through a port forward, over SPDY and over WebSocket, each checked by
// its SHA-256 on the far side. Sinks hash as the bytes arrive (test/support/stream-sinks.ts),
// so the client keeps nothing.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { sh } from '../support/pods';
import { chunksOf, SpdySinkClient, wsSend, wsSink, type Sink } from '../support/stream-sinks';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const PORT = 8000;
const BLOB = '/tmp/blob';

/** A SHA-256 fed as bytes arrive: `skip` first bytes left out (the port prefix of a WebSocket port forward). */
function hashing(skip = 0): { sink: Sink; bytes: () => number; hex: () => string } {
  const hash = createHash('sha256');
  let seen = 0;
  let counted = 0;
  return {
    sink: (data) => {
      const from = Math.max(0, Math.min(data.length, skip - seen));
      seen += data.length;
      counted += data.length - from;
      hash.update(data.subarray(from));
    },
    bytes: () => counted,
    hex: () => hash.digest('hex'),
  };
}

describe('64 MiB through exec stdout and stdin and a port forward, SPDY and WebSocket, checksummed', () => {
  const f = useShim({ pod: 'stream-checksums' });
  let container: string;
  let blobSum: string;
  const input = randomBytes(SIZE);
  const inputSum = createHash('sha256').update(input).digest('hex');

  before(async () => {
    // The container writes 64 MiB of random bytes and its sum, then serves it to each connection on PORT.
    container = await f.runContainer('server', {
      command: ['sh', '-c', `head -c ${SIZE} /dev/urandom > ${BLOB} && sha256sum ${BLOB} > ${BLOB}.sum && exec nc -ll -p ${PORT} -e cat ${BLOB}`],
    });
    const sum = await waitFor('the blob and its sum', async () => (await sh(f.client, container, `cat ${BLOB}.sum 2>/dev/null || true`)).trim() || undefined, { timeoutMs: 30_000, intervalMs: 100 });
    blobSum = sum.split(/\s+/)[0]!;
    assert.match(blobSum, /^[0-9a-f]{64}$/);
  });

  async function execUrl(cmd: string[], stdin: boolean): Promise<string> {
    return (await f.client.runtime.Exec({ containerId: container, cmd, stdin, stdout: true, stderr: true })).url;
  }

  /** An exec over SPDY as kubectl opens it: stdout to `sink` (kept when none), stdin from `input` when given. */
  async function spdyExec(cmd: string[], sink: Sink | undefined, stdin?: Buffer): Promise<{ stdout: string; stderr: string; status: string }> {
    const spdy = await SpdySinkClient.connect(await execUrl(cmd, stdin !== undefined), 'v4.channel.k8s.io');
    try {
      const error = await spdy.open({ streamType: 'error' }, { fin: true, keep: true });
      const stdinId = stdin ? await spdy.open({ streamType: 'stdin' }) : undefined;
      const stdout = await spdy.open({ streamType: 'stdout' }, { fin: true, keep: sink === undefined, ...(sink ? { sink } : {}) });
      const stderr = await spdy.open({ streamType: 'stderr' }, { fin: true, keep: true });
      if (stdinId !== undefined) await spdy.send(stdinId, chunksOf(stdin!, stdin!.length));
      await Promise.all([spdy.drained(stdout), spdy.drained(stderr), spdy.drained(error)]);
      return { stdout: spdy.kept(stdout), stderr: spdy.kept(stderr), status: spdy.kept(error) };
    } finally {
      spdy.close();
    }
  }

  /** The same over WebSocket (v5.channel.k8s.io). */
  async function wsExec(cmd: string[], sink: Sink | undefined, stdin?: Buffer): Promise<{ stdout: string; stderr: string; status: string }> {
    const link = await wsSink(await execUrl(cmd, stdin !== undefined), 'v5.channel.k8s.io', sink ? { 1: sink } : {}, sink ? [2, 3] : [1, 2, 3]);
    if (stdin) await wsSend(link, 0, chunksOf(stdin, stdin.length));
    await link.closed;
    return { stdout: link.kept(1), stderr: link.kept(2), status: link.kept(3) };
  }

  const succeeded = (status: string): void => assert.ok(status === '' || status.includes('"Success"'), `exec status: ${status}`);

  for (const [transport, exec] of [
    ['SPDY', spdyExec],
    ['WebSocket', wsExec],
  ] as const) {
    it(`exec stdout over ${transport}: 64 MiB arrive whole`, async () => {
      const got = hashing();
      const r = await exec(['cat', BLOB], got.sink);
      succeeded(r.status);
      assert.equal(got.bytes(), SIZE);
      assert.equal(got.hex(), blobSum);
    });

    it(`exec stdin over ${transport}: 64 MiB reach the command whole`, async () => {
      const r = await exec(['sha256sum'], undefined, input);
      succeeded(r.status);
      assert.equal(r.stdout.trim().split(/\s+/)[0], inputSum, `stderr: ${r.stderr}`);
    });
  }

  it('port forward over SPDY: 64 MiB arrive whole', async () => {
    const { url } = await f.client.runtime.PortForward({ podSandboxId: f.pod.id, port: [PORT] });
    const spdy = await SpdySinkClient.connect(url, 'portforward.k8s.io');
    try {
      const got = hashing();
      const headers = { port: String(PORT), requestID: '0' };
      const error = await spdy.open({ streamType: 'error', ...headers }, { fin: true, keep: true });
      const data = await spdy.open({ streamType: 'data', ...headers }, { sink: got.sink });
      await spdy.drained(data);
      assert.equal(spdy.kept(error), '');
      assert.equal(got.bytes(), SIZE);
      assert.equal(got.hex(), blobSum);
    } finally {
      spdy.close();
    }
  });

  it('port forward over WebSocket (v4.channel.k8s.io): 64 MiB arrive whole after the port prefix', async () => {
    const { url } = await f.client.runtime.PortForward({ podSandboxId: f.pod.id, port: [PORT] });
    // The first message on the data channel starts with the port (2 bytes), then the pod's bytes.
    const got = hashing(2);
    const link = await wsSink(`${url}?port=${PORT}`, 'v4.channel.k8s.io', { 0: got.sink }, [1]);
    await link.closed;
    assert.equal(link.kept(1).slice(2), '');
    assert.equal(got.bytes(), SIZE);
    assert.equal(got.hex(), blobSum);
  });
});
