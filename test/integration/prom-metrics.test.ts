// The shim's Prometheus endpoint, scraped from the real binary while it runs a pod: the
// families the issue names are there with their label sets, parsed with a real exposition
// parser; between two scrapes every counter only rose; reads the state cache answers are not
// counted as Docker calls. A shim without --metrics-bind-addr listens on no port of its own.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { before, describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { useShim } from '../support/fixture';
import { TEST_PAUSE_IMAGE } from '../support/images';
import { freeLoopbackPort, listeningTcpPorts } from '../support/net-probe';
import { waitFor } from '../support/poll';
import { runShimToExit, type ShimProcess } from '../support/shim';
import { counterPairs, family, histogram, labelSets, parseExposition, sample, scrape, type PromMetrics } from '../support/prom-text';
import { openExecStreams, parseStatus, spdyConnect } from '../support/streaming-clients';

const P = 'cri_docker_shim_';
const V4 = ['v4.channel.k8s.io'];
const UNKNOWN_ID = 'e'.repeat(64);

describe('Prometheus endpoint', () => {
  const f = useShim({ pod: 'prom', metrics: true });
  let talker: string;

  const scrapeParsed = async (): Promise<PromMetrics> => {
    const res = await scrape('127.0.0.1', f.shim.metricsPort!);
    assert.equal(res.status, 200);
    assert.match(res.contentType, /^text\/plain; version=0\.0\.4/);
    return parseExposition(res.body);
  };

  before(async () => {
    // A container that writes two log lines, then stays for the exec.
    talker = await f.runContainer('talker', { command: ['sh', '-c', 'echo one; echo two; sleep 3600'] });
  });

  it('serves the families the issue names, with their label sets, and counters only rise', async () => {
    const exec = await f.client.runtime.ExecSync({ containerId: talker, cmd: ['true'], timeout: 20 });
    assert.equal(exec.exitCode, 0);
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: UNKNOWN_ID }), rejectsWith(Code.NOT_FOUND));
    // A streaming exec session, run to its end.
    const { url } = await f.client.runtime.Exec({ containerId: talker, cmd: ['echo', 'streamed'], stdout: true });
    const { conn } = await spdyConnect(url, V4);
    const streams = await openExecStreams(conn, { stdout: true });
    assert.equal((await streams.stdout).toString(), 'streamed\n');
    assert.equal(parseStatus(await streams.error).status, 'Success');
    // A URL whose token was used already is refused.
    await assert.rejects(spdyConnect(url, V4), /HTTP 404/);
    await f.client.runtime.ListContainers({});

    // The follower's write and the session's end are told a moment after the client saw them.
    const first = await waitFor('the log lines and the closed session in /metrics', async () => {
      const m = await scrapeParsed();
      const lines = sample(m, `${P}container_log_lines_total`) ?? 0;
      return lines >= 2 && sample(m, `${P}streaming_sessions`, { kind: 'exec' }) === 0 ? m : undefined;
    });

    assert.equal(family(first, `${P}rpc_duration_seconds`).type, 'histogram');
    assert.deepEqual(labelSets(first, `${P}rpc_duration_seconds`), new Set(['code,method']));
    assert.ok(histogram(first, `${P}rpc_duration_seconds`, { method: 'ContainerStatus', code: 'NOT_FOUND' })!.count >= 1);
    assert.ok(histogram(first, `${P}rpc_duration_seconds`, { method: 'RunPodSandbox', code: 'OK' })!.count >= 1);
    assert.ok(histogram(first, `${P}rpc_duration_seconds`, { method: 'ExecSync', code: 'OK' })!.count >= 1);

    assert.deepEqual(labelSets(first, `${P}docker_operations_total`), new Set(['operation']));
    assert.ok(sample(first, `${P}docker_operations_total`, { operation: 'createContainer' })! >= 2, 'the pause container and the talker');
    assert.ok(sample(first, `${P}docker_operations_total`, { operation: 'createExec' })! >= 2);
    assert.ok(sample(first, `${P}docker_operations_total`, { operation: 'events' })! >= 1);
    // Start-up's version and info count too, though main.js asked for them before the client existed.
    assert.ok(sample(first, `${P}docker_operations_total`, { operation: 'version' })! >= 1);
    assert.ok(sample(first, `${P}docker_operations_total`, { operation: 'info' })! >= 1);
    assert.equal(family(first, `${P}docker_operation_errors_total`).type, 'counter');
    assert.deepEqual(labelSets(first, `${P}docker_operation_duration_seconds`), new Set(['operation']));

    assert.ok(sample(first, `${P}state_cache_objects`, { kind: 'containers' })! >= 2);
    assert.equal(sample(first, `${P}state_cache_synced`), 1);
    assert.equal(family(first, `${P}state_cache_reconnects_total`).type, 'counter');

    assert.ok(sample(first, `${P}container_log_bytes_total`)! >= 'one\ntwo\n'.length);
    assert.equal(family(first, `${P}container_log_rotations_total`).type, 'counter');

    assert.deepEqual(labelSets(first, `${P}streaming_sessions`), new Set(['kind']));
    assert.ok(sample(first, `${P}streaming_tokens_issued_total`, { kind: 'exec' })! >= 1);
    assert.ok(sample(first, `${P}streaming_tokens_rejected_total`, { kind: 'exec' })! >= 1);

    assert.deepEqual(labelSets(first, `${P}network_plugin_operations_total`), new Set(['operation,plugin,result']));
    assert.ok(sample(first, `${P}network_plugin_operations_total`, { plugin: 'noop', operation: 'setUp', result: 'ok' })! >= 1);

    assert.ok(sample(first, 'process_cpu_seconds_total')! > 0);
    assert.ok(sample(first, 'process_resident_memory_bytes')! > 0);
    assert.ok(sample(first, 'nodejs_heap_size_used_bytes')! > 0);

    // More calls, some answered by the state cache only.
    const LISTS = 5;
    for (let i = 0; i < LISTS; i++) await f.client.runtime.ListContainers({});
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: UNKNOWN_ID }), rejectsWith(Code.NOT_FOUND));
    await f.client.runtime.ExecSync({ containerId: talker, cmd: ['true'], timeout: 20 });
    const second = await scrapeParsed();

    const pairs = counterPairs(first, second);
    assert.ok(pairs.length > 50, `only ${pairs.length} counter series`);
    const fell = pairs.filter((p) => !(p.after >= p.before));
    assert.deepEqual(fell, [], 'no counter fell or vanished between two scrapes');

    const rpcCount = (m: PromMetrics, method: string, code = 'OK'): number => histogram(m, `${P}rpc_duration_seconds`, { method, code })?.count ?? 0;
    assert.equal(rpcCount(second, 'ListContainers') - rpcCount(first, 'ListContainers'), LISTS);
    assert.equal(rpcCount(second, 'ContainerStatus', 'NOT_FOUND') - rpcCount(first, 'ContainerStatus', 'NOT_FOUND'), 1);
    const dockerLists = (m: PromMetrics): number => sample(m, `${P}docker_operations_total`, { operation: 'listContainers' }) ?? 0;
    assert.equal(dockerLists(second), dockerLists(first), 'ListContainers was answered by the state cache, not counted as Docker calls');
    assert.ok(sample(second, `${P}docker_operations_total`, { operation: 'createExec' })! > sample(first, `${P}docker_operations_total`, { operation: 'createExec' })!);
  });

  it('answers 404 beside /metrics', async () => {
    assert.equal((await scrape('127.0.0.1', f.shim.metricsPort!, '/')).status, 404);
    assert.ok(listeningTcpPorts(f.shim.child.pid!).includes(f.shim.metricsPort!));
  });

  it('fails a second shim’s start-up with exit 1 when the address is taken', async () => {
    const dir = f.tempDir('prom-taken');
    const { code, stderr } = await runShimToExit([
      `--metrics-bind-addr=127.0.0.1:${f.shim.metricsPort!}`,
      `--container-runtime-endpoint=unix://${dir}/cri.sock`,
      `--cri-dockerd-root-directory=${dir}/root`,
      `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`,
    ]);
    assert.equal(code, 1);
    assert.match(stderr, /EADDRINUSE/);
  });
});

describe('without --metrics-bind-addr', () => {
  const f = useShim({ shim: false });
  let streamingPort: number;
  let shim: ShimProcess;

  before(async () => {
    streamingPort = await freeLoopbackPort();
    ({ shim } = await f.startShim({ args: [`--streaming-bind-addr=127.0.0.1:${streamingPort}`] }));
  });

  it('listens on no TCP port but the streaming server’s', () => {
    assert.deepEqual(listeningTcpPorts(shim.child.pid!), [streamingPort]);
  });

  it('refuses a --metrics-bind-addr that is not host:port at start, with exit code 2', async () => {
    const { code, stderr } = await runShimToExit(['--metrics-bind-addr=9101']);
    assert.equal(code, 2);
    assert.match(stderr, /--metrics-bind-addr: "9101" is not host:port/);
  });
});
