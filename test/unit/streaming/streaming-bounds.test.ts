// The streaming bounds that need no Docker: Docker's output passed on with backpressure, the
// per-pod port-forward relays (one per pod, none left once released, even mid-start), the relay
// program itself (in this process's own network namespace), the check that the namespace
// opened is the sandbox's, and the counting of sessions.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { waitFor } from '../../support/poll';
import type { ContainerInspect } from '../../../src/docker/types';
import { DockerOutput } from '../../../src/streaming/docker-output';
import { DEFAULT_STREAMING_LIMITS, IdleTimer, Slots } from '../../../src/streaming/limits';
import { openPodNetns, PodRelays, relayProgram, startRelayIn, type PodRelay } from '../../../src/streaming/pod-relay';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function frame(stream: number, data: string): Buffer {
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(Buffer.byteLength(data), 4);
  return Buffer.concat([head, Buffer.from(data)]);
}

/** A Writable that takes nothing until `open()`, remembering what it was given. */
function gate(): Writable & { got: () => string; open: () => void } {
  const chunks: Buffer[] = [];
  let waiting: Array<() => void> = [];
  let opened = false;
  const w = new Writable({
    highWaterMark: 4,
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      if (opened) done();
      else waiting.push(done);
    },
  });
  return Object.assign(w, {
    got: () => Buffer.concat(chunks).toString(),
    open: () => {
      opened = true;
      for (const done of waiting) done();
      waiting = [];
    },
  });
}

describe('Docker output with backpressure', () => {
  it('splits multiplexed frames to stdout and stderr, across chunk boundaries, payloads passed on as they come', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    const demux = new DockerOutput(out, err, false);
    const bytes = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(1, 'world'), frame(0, '!')]);
    for (let i = 0; i < bytes.length; i += 3) demux.write(bytes.subarray(i, i + 3));
    demux.end();
    await new Promise((r) => demux.once('finish', r));
    assert.equal(out.read().toString(), 'hello world!');
    assert.equal(err.read().toString(), 'oops');
  });

  it('passes output on as is with a TTY, and after a header that names no stream', async () => {
    const tty = new PassThrough();
    const demuxTty = new DockerOutput(tty, new PassThrough(), true);
    demuxTty.end(frame(2, 'raw'));
    await new Promise((r) => demuxTty.once('finish', r));
    assert.deepEqual(tty.read(), frame(2, 'raw'));

    const out = new PassThrough();
    const demux = new DockerOutput(out, new PassThrough(), false);
    demux.write(frame(1, 'a'));
    demux.end(Buffer.from('plain text, not multiplexed'));
    await new Promise((r) => demux.once('finish', r));
    assert.equal(out.read().toString(), 'aplain text, not multiplexed');
  });

  it('takes no more from its source while a channel does not take what it was given', async () => {
    const out = gate();
    const demux = new DockerOutput(out, new PassThrough(), false);
    const source = new PassThrough();
    source.pipe(demux);
    const big = Buffer.alloc(64 * 1024, 0x7a).toString();
    for (let i = 0; i < 64; i++) source.write(frame(1, big));
    await sleep(50);
    // The first frame or so went out; the rest waits in the source, not in the shim's heap.
    assert.ok(out.got().length <= 2 * big.length, `${out.got().length} bytes went out`);
    assert.ok(source.readableLength + source.writableLength > 60 * big.length, 'the source is not read');
    out.open();
    source.end();
    await new Promise((r) => demux.once('finish', r));
    assert.equal(out.got().length, 64 * big.length);
  });
});

/** A relay that starts when told to and records being killed. */
function fakeRelays() {
  const started: Array<{ sandboxId: string; resolve: (r: PodRelay) => void; reject: (e: Error) => void }> = [];
  const relays: Array<{ killed: boolean; dials: number[] }> = [];
  const pool = new PodRelays(
    (sandboxId) =>
      new Promise<PodRelay>((resolve, reject) => {
        started.push({ sandboxId, resolve, reject });
      }),
  );
  const make = (): PodRelay => {
    const state = { killed: false, dials: [] as number[] };
    relays.push(state);
    let exit!: () => void;
    const exited = new Promise<void>((r) => (exit = r));
    return {
      dial: async (port) => {
        state.dials.push(port);
        return new PassThrough() as never;
      },
      kill: () => {
        state.killed = true;
        exit();
      },
      exited,
    };
  };
  return { pool, started, relays, make };
}

describe('port-forward relays', () => {
  it('start one relay per pod, at the first dial, shared by its sessions, and stop it with the last', async () => {
    const { pool, started, relays, make } = fakeRelays();
    const a = pool.acquire('pod1');
    const b = pool.acquire('pod1');
    const other = pool.acquire('pod2');
    assert.equal(started.length, 0, 'nothing starts before a connection');
    const dials = [a.dial(80), b.dial(81), a.dial(82)];
    await sleep(0);
    assert.deepEqual(started.map((s) => s.sandboxId), ['pod1']);
    started[0]!.resolve(make());
    await Promise.all(dials);
    assert.deepEqual(relays[0]!.dials, [80, 81, 82]);
    a.release();
    a.release();
    assert.equal(relays[0]!.killed, false, 'another session still uses it');
    b.release();
    await sleep(0);
    assert.equal(relays[0]!.killed, true);
    assert.equal(pool.size, 0);
    other.release();
    await assert.rejects(a.dial(80), /closed/);
  });

  it('stop a relay whose sessions all went while it started', async () => {
    const { pool, started, relays, make } = fakeRelays();
    const a = pool.acquire('pod1');
    const dial = a.dial(80);
    await sleep(0);
    a.release();
    started[0]!.resolve(make());
    await assert.rejects(dial, /closed/);
    assert.equal(relays[0]!.killed, true);
    // A later session starts a relay of its own.
    const b = pool.acquire('pod1');
    const next = b.dial(80);
    await sleep(0);
    assert.equal(started.length, 2);
    started[1]!.resolve(make());
    await next;
    b.release();
    await sleep(0);
    assert.equal(relays[1]!.killed, true);
  });

  it('start another relay after one exited, and stop all at close', async () => {
    const { pool, started, relays, make } = fakeRelays();
    const a = pool.acquire('pod1');
    const first = a.dial(80);
    await sleep(0);
    const r0 = make();
    started[0]!.resolve(r0);
    await first;
    // It exits by itself (its namespace went, or it was killed from outside).
    r0.kill();
    await sleep(0);
    const second = a.dial(81);
    await sleep(0);
    assert.equal(started.length, 2);
    started[1]!.resolve(make());
    await second;
    pool.close();
    await sleep(0);
    assert.equal(relays[1]!.killed, true);
  });
});

describe('the port relay program', () => {
  /** A loopback listener that greets each connection; its port, and a port nothing listens on. */
  const listener = async (): Promise<{ port: number; closedPort: number; close: () => void }> => {
    const server = net.createServer((socket) => {
      // A dial given up on is reset unread.
      socket.on('error', () => undefined);
      socket.end('hello-from-loopback');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const closed = net.createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    return { port: (server.address() as net.AddressInfo).port, closedPort, close: () => void server.close() };
  };
  /** What the far end sent until it finished; then this end finishes too (the sockets are half-open, as the shim takes them). */
  const readAll = async (socket: net.Socket): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    socket.end();
    return Buffer.concat(chunks).toString();
  };
  /** Runs `body` with a relay in this process's own namespace (entering it needs root, as the shim). */
  const withRelay = async (body: (relay: PodRelay) => Promise<void>): Promise<void> => {
    const netns = fs.openSync('/proc/self/ns/net', 'r');
    let relay: PodRelay;
    try {
      relay = await startRelayIn(await relayProgram(undefined), netns);
    } finally {
      fs.closeSync(netns);
    }
    try {
      await body(relay);
    } finally {
      relay.kill();
      await relay.exited;
    }
  };

  it('hands back connected sockets, many at once, and says why a dial failed', async () => {
    const { port, closedPort, close } = await listener();
    try {
      await withRelay(async (relay) => {
        const answers = await Promise.all(Array.from({ length: 40 }, async () => readAll(await relay.dial(port))));
        assert.deepEqual(new Set(answers), new Set(['hello-from-loopback']));
        await assert.rejects(relay.dial(closedPort), new RegExp(`^Error: failed to connect to localhost:${closedPort} in the pod's network namespace: connect ECONNREFUSED 127\\.0\\.0\\.1:${closedPort}$`));
        assert.equal(await readAll(await relay.dial(port)), 'hello-from-loopback', 'a failed dial leaves the relay working');
        // Answers done while a socket waits for the shim's ACK all come, failures between sockets.
        const mixed = await Promise.allSettled([port, closedPort, port, closedPort, port].map((p) => relay.dial(p)));
        assert.deepEqual(mixed.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
        for (const r of mixed) if (r.status === 'fulfilled') assert.equal(await readAll(r.value), 'hello-from-loopback');
      });
    } finally {
      close();
    }
  });

  it('refuses a descriptor that is no network namespace', async () => {
    const notNetns = fs.openSync('/dev/null', 'r');
    try {
      await assert.rejects(startRelayIn(await relayProgram(undefined), notNetns), /port-relay: cannot enter the pod's network namespace/);
    } finally {
      fs.closeSync(notNetns);
    }
  });

  it('exits when the shim closes its channel, and takes no request but a dial to a port in range', async () => {
    const netns = fs.openSync('/proc/self/ns/net', 'r');
    const child = spawn(await relayProgram(undefined), [], { stdio: ['ignore', 'ignore', 'pipe', netns, 'ipc'], env: {} });
    fs.closeSync(netns);
    const exited = once(child, 'exit');
    try {
      const messages: unknown[] = [];
      child.on('message', (m: unknown, handle: unknown) => {
        messages.push(m);
        if (handle instanceof net.Socket) handle.destroy();
      });
      await waitFor('the relay to be ready', () => messages.length > 0, { timeoutMs: 10_000 });
      assert.deepEqual(messages, [{ ready: true }]);
      for (const bad of [{ id: 1, port: 0 }, { id: 2, port: 65536 }, { id: 3, port: '80' }, { id: 'x', port: 80 }, { port: 80 }, { id: 4, port: 80, more: 1 }]) child.send(bad);
      // A dial after them is answered: they were read, and nothing was dialed for them.
      child.send({ id: 5, port: 1 });
      await waitFor('the answer to the good dial', () => messages.length > 1, { timeoutMs: 10_000 });
      assert.deepEqual(messages.slice(1).map((m) => (m as { id?: unknown }).id), [5]);
      child.disconnect();
      assert.deepEqual(await exited, [0, null]);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('the pod network namespace check', () => {
  const inspect = (pid: number, startedAt: string, running = true) => ({ State: { Running: running, Pid: pid, StartedAt: startedAt } }) as unknown as ContainerInspect;
  const openFds = () => fs.readdirSync('/proc/self/fd').length;

  it('answers the namespace of the process Docker names when Docker names it again after the open', async () => {
    const answers = [inspect(process.pid, 'T1'), inspect(process.pid, 'T1')];
    const fd = await openPodNetns({ inspectContainer: async () => answers.shift()! }, 'sb');
    try {
      assert.equal(fs.fstatSync(fd).ino, fs.statSync(`/proc/${process.pid}/ns/net`).ino);
    } finally {
      fs.closeSync(fd);
    }
  });

  it('refuses, and closes what it opened, when the sandbox stopped or restarted meanwhile', async () => {
    const fds = openFds();
    for (const second of [inspect(process.pid, 'T2'), inspect(process.pid + 1, 'T1'), inspect(process.pid, 'T1', false)]) {
      const answers = [inspect(process.pid, 'T1'), second];
      await assert.rejects(openPodNetns({ inspectContainer: async () => answers.shift()! }, 'sb'), /stopped or restarted/);
    }
    await assert.rejects(openPodNetns({ inspectContainer: async () => inspect(0, 'T1', false) }, 'sb'), /not running/);
    assert.equal(openFds(), fds);
  });
});

describe('streaming session counting', () => {
  it('refuses past the bound per pod and on the node, naming which, and counts a release once', () => {
    const slots = new Slots(2, 3, 'streaming sessions');
    const a1 = slots.take('a');
    const a2 = slots.take('a');
    assert.equal(typeof a1, 'function');
    assert.equal(slots.take('a'), 'too many streaming sessions to pod sandbox a (at most 2 at once)');
    const b1 = slots.take('b');
    assert.equal(slots.take('c'), 'too many streaming sessions on this node (at most 3 at once)');
    (a1 as () => void)();
    (a1 as () => void)();
    assert.equal(slots.held('a'), 1);
    assert.equal(typeof slots.take('c'), 'function');
    for (const r of [a2, b1]) (r as () => void)();
  });

  it('gives each pod its whole allowance while another holds all of its own, with the default bounds', () => {
    const { sessionsPerPod, sessions } = DEFAULT_STREAMING_LIMITS;
    // A full node (kubelet's default maxPods, 110) at its per-pod bound, and one more pod, fit
    // under the node's (the Docker streams' budget at the unit's descriptor limit).
    assert.ok(sessions >= 111 * sessionsPerPod, `${sessions} node-wide for ${sessionsPerPod} per pod`);
    const slots = new Slots(sessionsPerPod, sessions, 'streaming sessions');
    const greedy = Array.from({ length: sessionsPerPod }, () => slots.take('greedy'));
    assert.ok(greedy.every((r) => typeof r === 'function'));
    assert.match(String(slots.take('greedy')), /to pod sandbox greedy/);
    for (let pod = 0; pod < 110; pod++) {
      for (let i = 0; i < sessionsPerPod; i++) assert.equal(typeof slots.take(`pod-${pod}`), 'function', `pod ${pod}, session ${i}`);
    }
  });

  it('calls an idle timer back once nothing touched it for its time', async () => {
    let fired = 0;
    const timer = new IdleTimer(80, () => fired++);
    for (let i = 0; i < 5; i++) {
      await sleep(30);
      timer.touch();
    }
    assert.equal(fired, 0);
    await sleep(150);
    assert.equal(fired, 1);
    timer.stop();
  });
});
