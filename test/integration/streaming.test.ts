// Exec, Attach and PortForward through the real shim: the RPC answers a URL; the test opens it
// over SPDY (spdy-transport) or WebSocket (ws) as kubelet or kubectl would.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { before, describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { busybox, runContainer, SLEEP_FOREVER, waitExited } from '../support/pods';
import { httpGetThroughPortForward, openExecStreams, parseStatus, spdyConnect, wsConnect } from '../support/streaming-clients';

const V4 = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

describe('streaming: exec, attach and port forward', () => {
  const f = useShim({ pod: 'stream' });
  const { run } = f;
  let sleeper: string;

  before(async () => (sleeper = await f.runContainer('sleeper', SLEEP_FOREVER)));

  it('answers URLs on 127.0.0.1 by default', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['true'], stdout: true });
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]{32}$/);
  });

  it('execs over SPDY with stdout and stderr apart, and a Success status', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'echo out; echo err >&2'], stdout: true, stderr: true });
    const { conn, protocol } = await spdyConnect(url, V4);
    assert.equal(protocol, 'v4.channel.k8s.io');
    const s = await openExecStreams(conn, { stdout: true, stderr: true });
    assert.equal((await s.stdout).toString(), 'out\n');
    assert.equal((await s.stderr).toString(), 'err\n');
    assert.equal(parseStatus(await s.error).status, 'Success');
  });

  it('pipes stdin over SPDY and reports a non-zero exit code', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'cat; exit 3'], stdin: true, stdout: true });
    const { conn } = await spdyConnect(url, V4);
    const s = await openExecStreams(conn, { stdin: true, stdout: true });
    s.stdin!.end('round trip\n');
    assert.equal((await s.stdout).toString(), 'round trip\n');
    const status = parseStatus(await s.error);
    assert.equal(status.status, 'Failure');
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details?.causes, [{ reason: 'ExitCode', message: '3' }]);
  });

  it('applies terminal resizes to a TTY exec', async () => {
    const script = 'for i in $(seq 200); do [ "$(stty size)" = "45 123" ] && break; sleep 0.05; done; echo size=$(stty size)';
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', script], tty: true, stdout: true });
    const { conn } = await spdyConnect(url, V4);
    const s = await openExecStreams(conn, { stdout: true, tty: true });
    s.resize!.write(JSON.stringify({ Width: 123, Height: 45 }));
    assert.match((await s.stdout).toString(), /size=45 123/);
    assert.equal(parseStatus(await s.error).status, 'Success');
  });

  it('execs over WebSocket (v5 and base64 v4), with stdin closed through channel 255', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'cat; echo err >&2; exit 4'], stdin: true, stdout: true, stderr: true });
    const session = await wsConnect(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    assert.equal(session.protocol, 'v5.channel.k8s.io');
    session.send(0, 'via websocket\n');
    session.send(255, Buffer.from([0]));
    const got = await session.done;
    assert.equal(got.get(1)?.toString(), 'via websocket\n');
    assert.equal(got.get(2)?.toString(), 'err\n');
    assert.deepEqual(parseStatus(got.get(3)!).details?.causes, [{ reason: 'ExitCode', message: '4' }]);

    const second = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['echo', 'b64'], stdout: true });
    const b64 = await wsConnect(second.url, ['v4.base64.channel.k8s.io']);
    assert.equal(b64.protocol, 'v4.base64.channel.k8s.io');
    const out = await b64.done;
    assert.equal(out.get(1)?.toString(), 'b64\n');
    assert.equal(parseStatus(out.get(3)!).status, 'Success');
  });

  it('attaches to a container that reads stdin and prints', async () => {
    const reader = await runContainer(
      f.client,
      f.pod,
      busybox(run, 'reader', { command: ['sh', '-c', 'read line; echo got:$line'], stdin: true, stdinOnce: true }),
    );
    const { url } = await f.client.runtime.Attach({ containerId: reader, stdin: true, stdout: true, stderr: true });
    assert.match(url, /\/attach\//);
    const { conn } = await spdyConnect(url, V4);
    const s = await openExecStreams(conn, { stdin: true, stdout: true, stderr: true });
    s.stdin!.write('hello\n');
    assert.equal((await s.stdout).toString(), 'got:hello\n');
    assert.equal(parseStatus(await s.error).status, 'Success');
    await waitExited(f.client, reader);
  });

  it('forwards a port bound to 127.0.0.1 inside the pod, and reports a closed port', async () => {
    await runContainer(
      f.client,
      f.pod,
      busybox(run, 'web', { command: ['sh', '-c', 'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www'] }),
    );
    const fetchThrough = (port: number) => httpGetThroughPortForward(f.client, f.pod.id, port);
    // httpd in the pod may take a moment to listen.
    const ok = await waitFor('the pod port to answer through port forward', async () => {
      const r = await fetchThrough(8080);
      return r.body.includes('hello-from-pod') ? r : undefined;
    }, { timeoutMs: 20_000 });
    assert.match(ok.body, /^HTTP\/1\.[01] 200/);
    assert.equal(ok.error, '');

    const closed = await fetchThrough(9);
    assert.match(closed.error, /localhost:9/);
    assert.equal(closed.body, '');
  });

  it('survives clients hanging up in the middle of a command', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'echo up; sleep 3600'], stdin: true, stdout: true });
    const ws = await wsConnect(url, ['v4.channel.k8s.io']);
    await waitFor('output over WebSocket', () => ws.received().get(1)?.toString() === 'up\n', { timeoutMs: 10_000 });
    ws.ws.terminate();
    const again = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'sleep 3600'], stdin: true, stdout: true });
    const { socket, conn } = await spdyConnect(again.url, V4);
    await openExecStreams(conn, { stdin: true, stdout: true });
    socket.destroy();
    // The shim is still serving, and so is its streaming server.
    const next = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['echo', 'still here'], stdout: true });
    const s = await openExecStreams((await spdyConnect(next.url, V4)).conn, { stdout: true });
    assert.equal((await s.stdout).toString(), 'still here\n');
  });

  it('serves a token once, and 404 for unknown ones', async () => {
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['true'], stdout: true });
    const first = await spdyConnect(url, V4);
    const s = await openExecStreams(first.conn, { stdout: true });
    assert.equal(parseStatus(await s.error).status, 'Success');
    await assert.rejects(spdyConnect(url, V4), { status: 404 });
    await assert.rejects(wsConnect(url, ['v4.channel.k8s.io']), { status: 404 });
    await assert.rejects(spdyConnect(url.replace(/\/exec\/.*/, '/exec/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), V4), { status: 404 });
    // A URL of one kind does not open another.
    const other = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['true'], stdout: true });
    await assert.rejects(spdyConnect(other.url.replace('/exec/', '/attach/'), V4), { status: 404 });
  });

  it('refuses bad requests with the field named', async () => {
    const c = f.client.runtime;
    await assert.rejects(c.Exec({ containerId: sleeper, cmd: [], stdout: true }), rejectsWith(Code.INVALID_ARGUMENT, /cmd is required/));
    await assert.rejects(c.Exec({ containerId: sleeper, cmd: ['true'] }), rejectsWith(Code.INVALID_ARGUMENT, /one of stdin, stdout and stderr/));
    await assert.rejects(c.Exec({ containerId: sleeper, cmd: ['true'], tty: true, stdout: true, stderr: true }), rejectsWith(Code.INVALID_ARGUMENT, /tty and stderr/));
    await assert.rejects(c.Exec({ containerId: '../etc', cmd: ['true'], stdout: true }), rejectsWith(Code.INVALID_ARGUMENT, /container_id/));
    await assert.rejects(c.Exec({ containerId: 'abcdef0123', cmd: ['true'], stdout: true }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(c.Attach({ containerId: sleeper }), rejectsWith(Code.INVALID_ARGUMENT, /one of stdin/));
    await assert.rejects(c.PortForward({ podSandboxId: f.pod.id, port: [0] }), rejectsWith(Code.INVALID_ARGUMENT, /port: 0/));
    await assert.rejects(c.PortForward({ podSandboxId: f.pod.id, port: [70000] }), rejectsWith(Code.INVALID_ARGUMENT, /port: 70000/));
    await assert.rejects(c.PortForward({ podSandboxId: '', port: [80] }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id is required/));
    const done = await runContainer(f.client, f.pod, busybox(run, 'done', { command: ['true'] }));
    await waitExited(f.client, done);
    await assert.rejects(c.Exec({ containerId: done, cmd: ['true'], stdout: true }), rejectsWith(Code.FAILED_PRECONDITION, /not running/));
  });
});
